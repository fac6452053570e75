package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stratamem/strata/server"
)

func TestKeyring(t *testing.T) {
	sum := sha256.Sum256([]byte("hashed-secret-of-16+"))
	kr, err := server.NewKeyring(
		server.Key{Name: "a", Secret: "plain-secret-of-16+", Resources: []string{"user-7", "user-9"}},
		server.Key{Name: "b", SHA256: hex.EncodeToString(sum[:]), Resources: []string{"*"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kr.Lookup("plain-secret-of-16+")
	if err != nil || p.Name != "a" || !p.Allows("user-9") || p.Allows("user-8") || p.Allows("") || p.Admin() {
		t.Errorf("key a: %+v %v", p, err)
	}
	p, err = kr.Lookup("hashed-secret-of-16+")
	if err != nil || !p.Admin() || !p.Allows("anyone") || !p.Allows("") {
		t.Errorf("key b: %+v %v", p, err)
	}
	for _, s := range []string{"", "plain-secret-of-16", "PLAIN-SECRET-OF-16+"} {
		if _, err := kr.Lookup(s); !errors.Is(err, server.ErrUnauthenticated) {
			t.Errorf("Lookup(%q): %v", s, err)
		}
	}
	for name, keys := range map[string][]server.Key{
		"short secret":  {{Name: "a", Secret: "short", Resources: []string{"r"}}},
		"no resource":   {{Name: "a", Secret: "long-enough-secret", Resources: nil}},
		"empty res":     {{Name: "a", Secret: "long-enough-secret", Resources: []string{" "}}},
		"no name":       {{Secret: "long-enough-secret", Resources: []string{"r"}}},
		"both":          {{Name: "a", Secret: "long-enough-secret", SHA256: hex.EncodeToString(sum[:]), Resources: []string{"r"}}},
		"bad hash":      {{Name: "a", SHA256: "abc", Resources: []string{"r"}}},
		"dup name":      {{Name: "a", Secret: "long-enough-secret", Resources: []string{"r"}}, {Name: "a", Secret: "other-long-secret", Resources: []string{"r"}}},
		"shared secret": {{Name: "a", Secret: "long-enough-secret", Resources: []string{"r"}}, {Name: "b", Secret: "long-enough-secret", Resources: []string{"q"}}},
	} {
		if _, err := server.NewKeyring(keys...); !errors.Is(err, server.ErrInvalidKeys) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestKeyFileAndFlag(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keys.json")
	_ = os.WriteFile(good, []byte(`{"keys":[{"name":"a","key":"a-long-enough-secret","resources":["user-7"]}]}`), 0o600)
	ks, err := server.ReadKeyFile(good)
	if err != nil || len(ks) != 1 || ks[0].Resources[0] != "user-7" {
		t.Fatalf("%+v %v", ks, err)
	}
	// A misspelt field is an error, not a key bound to nothing.
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"keys":[{"name":"a","key":"a-long-enough-secret","resource":["user-7"]}]}`), 0o600)
	if _, err := server.ReadKeyFile(bad); !errors.Is(err, server.ErrInvalidKeys) || !strings.Contains(err.Error(), "resource") {
		t.Errorf("misspelt field: %v", err)
	}
	k, err := server.ParseKeyFlag("ops:the-admin-secret-1234=*")
	if err != nil || k.Name != "ops" || k.Secret != "the-admin-secret-1234" || k.Resources[0] != "*" {
		t.Errorf("flag: %+v %v", k, err)
	}
	k, err = server.ParseKeyFlag("a:s3cret-s3cret-s3cret=user-7,user-9")
	if err != nil || len(k.Resources) != 2 {
		t.Errorf("flag: %+v %v", k, err)
	}
	for _, s := range []string{"nosecret=user-7", "a:secret", ":s=r", "a:=r"} {
		if _, err := server.ParseKeyFlag(s); !errors.Is(err, server.ErrInvalidKeys) || strings.Contains(err.Error(), "secret=") {
			t.Errorf("ParseKeyFlag(%q): %v", s, err)
		}
	}
}

// TestServeMCPTransport runs the stdio code path over the SDK's
// in-memory transport: the key is checked once at start, and its rate
// applies to tool calls, which no HTTP middleware sees there.
func TestServeMCPTransport(t *testing.T) {
	needModel(t)
	srv, _ := serve(t, t.TempDir(), server.Options{Rate: 0.001, Burst: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.ServeMCP(ctx, "not-a-key", &mcp.InMemoryTransport{}); !errors.Is(err, server.ErrUnauthenticated) {
		t.Fatalf("unknown key: %v", err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.ServeMCP(ctx, key7, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if res := tool(t, cs, server.ToolReadScratchpad, map[string]any{}); res.IsError {
			t.Fatalf("call %d: %s", i, text(res))
		}
	}
	if res := tool(t, cs, server.ToolReadScratchpad, map[string]any{}); !res.IsError || !strings.Contains(text(res), "rate limited") {
		t.Errorf("third call over a burst of 2: %v %s", res.IsError, text(res))
	}
	cancel() // ends the session: ServeMCP returns
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeMCP did not return after its context ended")
	}
	_ = cs.Close()
}
