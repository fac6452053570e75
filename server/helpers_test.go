package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/server"
	"github.com/stratamem/strata/vectorstore/pgvector"
)

// The test keys: one per user, and an admin's.
const (
	key7     = "key-for-user-7-aaaaaaaaaaaa"
	key8     = "key-for-user-8-bbbbbbbbbbbb"
	keyAdmin = "admin-key-cccccccccccccccc"
)

func keyring(t testing.TB) *server.Keyring {
	t.Helper()
	kr, err := server.NewKeyring(
		server.Key{Name: "agent-7", Secret: key7, Resources: []string{"user-7"}},
		server.Key{Name: "agent-8", Secret: key8, Resources: []string{"user-8"}},
		server.Key{Name: "ops", Secret: keyAdmin, Resources: []string{server.AllResources}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// needModel skips the test when the offline default model is not
// installed (scripts/model.sh), unless STRATA_REQUIRE_MODEL=1.
func needModel(t testing.TB) {
	t.Helper()
	if _, err := uselite.DefaultDir(); errors.Is(err, uselite.ErrModelNotFound) {
		if os.Getenv("STRATA_REQUIRE_MODEL") == "1" {
			t.Fatalf("default model missing and STRATA_REQUIRE_MODEL=1: %v", err)
		}
		t.Skip("default model not installed (make model)")
	} else if err != nil {
		t.Fatal(err)
	}
}

// pgDSN is the test server's DSN (scripts/pg.sh); the test is skipped
// without one unless STRATA_REQUIRE_PG=1.
func pgDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	if dsn == "" {
		if os.Getenv("STRATA_REQUIRE_PG") == "1" {
			t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1; run: scripts/pg.sh up")
		}
		t.Skip("STRATA_TEST_PG_DSN is not set; run: scripts/pg.sh up")
	}
	return dsn
}

// pgTarget is a store URL on the test server with a collection of the
// test's own, dropped at cleanup.
func pgTarget(t testing.TB) string {
	t.Helper()
	dsn := pgDSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "srv_" + hex.EncodeToString(b)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("collection", name)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		p, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer p.Close()
		if err := pgvector.DropCollection(context.Background(), p, "", name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return u.String()
}

// targets are the stores the end-to-end tests run on: an embedded
// directory always, PostgreSQL when the test server is up.
func targets(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"embedded": func(t *testing.T) string { return filepath.Join(t.TempDir(), "data") },
		"postgres": func(t *testing.T) string { return pgTarget(t) },
	}
}

func openEnv(t testing.TB, target string) *environment.Env {
	t.Helper()
	env, err := environment.Open(context.Background(), target, environment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// serve starts a server over a new environment at target on an httptest
// server (127.0.0.1); cleanup shuts both down and closes the store.
func serve(t testing.TB, target string, opts server.Options) (*server.Server, *httptest.Server) {
	t.Helper()
	srv, hs, _ := serveEnv(t, target, opts)
	return srv, hs
}

// serveEnv is serve, returning the environment too.
func serveEnv(t testing.TB, target string, opts server.Options) (*server.Server, *httptest.Server, *environment.Env) {
	t.Helper()
	env := openEnv(t, target)
	if opts.Keys == nil {
		opts.Keys = keyring(t)
	}
	srv, err := server.New(env, opts)
	if err != nil {
		_ = env.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv, hs, env
}

// call sends one API request with key and decodes the JSON answer into
// out (when not nil); it returns the status.
func call(t testing.TB, hs *httptest.Server, key, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, hs.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	if out != nil && resp.StatusCode != http.StatusOK {
		if e, ok := out.(*apiError); ok {
			_ = json.Unmarshal(b, e)
		}
	}
	return resp.StatusCode
}

// apiError is the JSON of an error answer.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// bearerTransport adds a key to every request of an HTTP client.
type bearerTransport struct {
	key  string
	base http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}
