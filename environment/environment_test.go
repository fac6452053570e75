package environment_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	qc "github.com/qdrant/go-client/qdrant"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/filestore"
	"github.com/stratamem/strata/storage/postgres"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/pgvector"
)

var stateKey = storage.Key{Scope: "global", Layer: "env-test", Name: "state"}

// put writes one record (embedded by env's embedder) and returns env.
func put(t *testing.T, env *environment.Env, id string) {
	t.Helper()
	ctx := context.Background()
	vs, err := env.Memory.Embedder.Embed(ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Records().Upsert(ctx, vectorstore.Record{ID: id, Layer: "x", Text: id, Vector: vs[0]}); err != nil {
		t.Fatal(err)
	}
}

func wantMismatch(t *testing.T, err error, recorded, given environment.Record) {
	t.Helper()
	var me *environment.EmbedderMismatchError
	if !errors.As(err, &me) {
		t.Fatalf("error %v, want *EmbedderMismatchError", err)
	}
	if !errors.Is(err, environment.ErrEmbedderMismatch) || !errors.Is(err, embedded.ErrEmbedderMismatch) {
		t.Errorf("%v does not match ErrEmbedderMismatch", err)
	}
	if me.Recorded != recorded || me.Given != given {
		t.Errorf("mismatch names recorded %+v, given %+v; want %+v, %+v", me.Recorded, me.Given, recorded, given)
	}
	if msg := err.Error(); !strings.Contains(msg, recorded.Embedder) || !strings.Contains(msg, given.Embedder) {
		t.Errorf("message %q does not name both embedders", msg)
	}
}

func TestDirectory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := environment.Open(ctx, dir, environment.Options{MustExist: true}); !errors.Is(err, environment.ErrNotExist) {
		t.Fatalf("MustExist on a missing directory: %v", err)
	}
	env, err := environment.Open(ctx, dir, environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	if !env.Created || env.Dir != dir || env.Embedded == nil || env.Recorded != (environment.Record{Embedder: "hash-16", Dimension: 16}) {
		t.Errorf("new directory: %+v", env)
	}
	if _, ok := env.State.(*filestore.Store); !ok {
		t.Errorf("state %T", env.State)
	}
	put(t, env, "r1")
	if _, err := env.State.Put(ctx, stateKey, []byte("s"), 0); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened without an embedder: the recorded one, through a file URL.
	env, err = environment.Open(ctx, "file://"+filepath.ToSlash(dir), environment.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if env.Created || env.Memory.Embedder.Model() != "hash-16" {
		t.Errorf("reopened: created %v, embedder %s", env.Created, env.Memory.Embedder.Model())
	}
	if n, _ := env.Records().Count(ctx, vectorstore.Filter{}); n != 1 {
		t.Errorf("records = %d", n)
	}
	if e, err := env.State.Get(ctx, stateKey); err != nil || string(e.Value) != "s" {
		t.Errorf("state = %+v, %v", e, err)
	}
	_ = env.Close()

	_, err = environment.Open(ctx, dir, environment.Options{Embedder: hashing.New(8)})
	wantMismatch(t, err, environment.Record{Embedder: "hash-16", Dimension: 16}, environment.Record{Embedder: "hash-8", Dimension: 8})

	// A file is not a directory.
	f := filepath.Join(t.TempDir(), "f")
	_ = os.WriteFile(f, nil, 0o644)
	if _, err := environment.Open(ctx, f, environment.Options{}); !errors.Is(err, environment.ErrInvalidTarget) {
		t.Errorf("a file: %v", err)
	}
}

// TestDirectoryWrittenByEmbedded: a directory embedded.Open wrote opens
// through environment.Open, and the other way round.
func TestDirectoryWrittenByEmbedded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ee, err := embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(32)})
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := ee.Memory.Embedder.Embed(ctx, []string{"hello"})
	if err := ee.Memory.Records.Upsert(ctx, vectorstore.Record{ID: "a", Layer: "x", Text: "hello", Vector: vs[0]}); err != nil {
		t.Fatal(err)
	}
	_ = ee.Close()
	env, err := environment.Open(ctx, dir, environment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recorded != (environment.Record{Embedder: "hash-32", Dimension: 32}) {
		t.Errorf("recorded %+v", env.Recorded)
	}
	ms, err := env.Records().Query(ctx, vs[0], vectorstore.QueryOptions{K: 1})
	if err != nil || len(ms) != 1 || ms[0].Record.ID != "a" || ms[0].Score < 0.99 {
		t.Errorf("search = %+v, %v", ms, err)
	}
	_ = env.Close()
	_, err = embedded.Open(ctx, dir, embedded.Options{Embedder: hashing.New(64)})
	var me *embedded.EmbedderMismatchError
	if !errors.As(err, &me) || me.Recorded.Embedder != "hash-32" || me.Given.Embedder != "hash-64" {
		t.Errorf("embedded.Open with another embedder: %v", err)
	}
}

// pgURL returns the test server's URL for a fresh collection in a fresh
// schema (so the embedder table starts missing, as in a database written
// by older strata), dropped when the test ends, and an admin pool.
func pgURL(t *testing.T) (string, *pgxpool.Pool, string) {
	t.Helper()
	dsn := os.Getenv("STRATA_TEST_PG_DSN")
	if dsn == "" {
		if os.Getenv("STRATA_REQUIRE_PG") == "1" {
			t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1; run: scripts/pg.sh up")
		}
		t.Skip("STRATA_TEST_PG_DSN is not set; run: scripts/pg.sh up")
	}
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	schema := fmt.Sprintf("env_test_%08x", rand.Uint32())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		_, _ = admin.Exec(context.Background(), "DELETE FROM strata_schema_migrations WHERE component LIKE $1", "%"+schema+"%")
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String(), admin, schema
}

func withCollection(raw, name string) string {
	u, _ := url.Parse(raw)
	q := u.Query()
	q.Set("collection", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// hashes builds hashing embedders for collections without a record.
func hashes(_ context.Context, dim int) (embed.Embedder, error) { return hashing.New(dim), nil }

// other is an embedder with the dimension of hash-16 and another model.
type other struct{ embed.Embedder }

func (other) Model() string { return "other-16" }

func TestPostgres(t *testing.T) {
	base, admin, schema := pgURL(t)
	ctx := context.Background()
	u := withCollection(base, "memories")

	if _, err := environment.Open(ctx, u, environment.Options{MustExist: true}); !errors.Is(err, environment.ErrNotExist) {
		t.Fatalf("MustExist on a missing collection: %v", err)
	}
	env, err := environment.Open(ctx, u, environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	h16 := environment.Record{Embedder: "hash-16", Dimension: 16}
	if !env.Created || env.Recorded != h16 || env.Dir != "" {
		t.Errorf("created: %+v", env)
	}
	if _, ok := env.State.(*postgres.Store); !ok {
		t.Fatalf("state %T", env.State)
	}
	put(t, env, "r1")
	if e, err := env.State.Get(ctx, stateKey); err == nil {
		_ = env.State.Delete(ctx, stateKey, e.Revision)
	}
	if _, err := env.State.Put(ctx, stateKey, []byte("s"), 0); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, pgvector.EmbedderTable}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Errorf("embedder table rows = %d, %v", n, err)
	}

	// Reopened without an embedder: the recorded one.
	env, err = environment.Open(ctx, u, environment.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if env.Created || env.Recorded != h16 || env.Memory.Embedder.Model() != "hash-16" || env.RecordedIn == "" {
		t.Errorf("reopened: %+v", env)
	}
	if e, err := env.State.Get(ctx, stateKey); err != nil || string(e.Value) != "s" {
		t.Errorf("state = %+v, %v", e, err)
	} else {
		_ = env.State.Delete(ctx, stateKey, e.Revision)
	}
	_ = env.Close()
	env, err = environment.Open(ctx, u, environment.Options{Embedder: hashing.New(16), NoState: true})
	if err != nil {
		t.Fatal(err)
	}
	if env.State != nil {
		t.Errorf("NoState opened %T", env.State)
	}
	_ = env.Close()

	// Another embedder is refused, naming both: another dimension, or the
	// same dimension and another model.
	_, err = environment.Open(ctx, u, environment.Options{Embedder: hashing.New(8)})
	wantMismatch(t, err, h16, environment.Record{Embedder: "hash-8", Dimension: 8})
	_, err = environment.Open(ctx, u, environment.Options{Embedder: other{hashing.New(16)}})
	wantMismatch(t, err, h16, environment.Record{Embedder: "other-16", Dimension: 16})

	// A state store named apart.
	env, err = environment.Open(ctx, u, environment.Options{State: "mem://"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env.State.(*storage.Memory); !ok {
		t.Errorf("Options.State opened %T", env.State)
	}
	_ = env.Close()
}

// TestPostgresOldCollections: collections written by today's pgvector
// code, which records no embedder, keep opening.
func TestPostgresOldCollections(t *testing.T) {
	base, admin, _ := pgURL(t)
	ctx := context.Background()

	// Non-empty: opened with NewEmbedder and left unrecorded, until a
	// caller names the embedder.
	old := withCollection(base, "old")
	c, err := vectorstore.Open(ctx, old, &vectorstore.Options{Dimension: 16})
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := hashing.New(16).Embed(ctx, []string{"hello"})
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Layer: "x", Text: "hello", Vector: vs[0]}); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	env, err := environment.Open(ctx, old, environment.Options{NewEmbedder: hashes, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recorded != (environment.Record{}) || env.Memory.Embedder.Model() != "hash-16" {
		t.Errorf("old collection: recorded %+v, embedder %s", env.Recorded, env.Memory.Embedder.Model())
	}
	_ = env.Close()
	// An embedder of another dimension cannot be its embedder.
	if _, err := environment.Open(ctx, old, environment.Options{Embedder: hashing.New(8)}); !errors.Is(err, vectorstore.ErrDimensionMismatch) {
		t.Errorf("8-d embedder on a 16-d collection: %v", err)
	}
	env, err = environment.Open(ctx, old, environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recorded != (environment.Record{Embedder: "hash-16", Dimension: 16}) {
		t.Errorf("named embedder not recorded: %+v", env.Recorded)
	}
	_ = env.Close()
	_, err = environment.Open(ctx, old, environment.Options{Embedder: other{hashing.New(16)}})
	wantMismatch(t, err, environment.Record{Embedder: "hash-16", Dimension: 16}, environment.Record{Embedder: "other-16", Dimension: 16})

	// Empty: recorded on open.
	empty := withCollection(base, "empty")
	c, err = vectorstore.Open(ctx, empty, &vectorstore.Options{Dimension: 8})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	env, err = environment.Open(ctx, empty, environment.Options{NewEmbedder: hashes})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recorded != (environment.Record{Embedder: "hash-8", Dimension: 8}) {
		t.Errorf("empty collection: recorded %+v", env.Recorded)
	}
	_ = env.Close()

	// Dropped and created again with the same name: the old record does
	// not apply to the new collection.
	u, _ := url.Parse(base)
	if err := pgvector.DropCollection(ctx, admin, u.Query().Get("schema"), "empty"); err != nil {
		t.Fatal(err)
	}
	c, err = vectorstore.Open(ctx, empty, &vectorstore.Options{Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	vs, _ = hashing.New(4).Embed(ctx, []string{"x"})
	_ = c.Upsert(ctx, vectorstore.Record{ID: "x", Layer: "x", Text: "x", Vector: vs[0]})
	_ = c.Close()
	env, err = environment.Open(ctx, empty, environment.Options{NewEmbedder: hashes})
	if err != nil {
		t.Fatal(err)
	}
	if env.Recorded != (environment.Record{}) || env.Records().Info().Dimension != 4 {
		t.Errorf("recreated collection inherited %+v", env.Recorded)
	}
	_ = env.Close()
}

// TestQdrant runs the record and the refusal against a real Qdrant
// (STRATA_QDRANT_ADDR=host:6334, see vectorstore/qdrant/README.md); the
// driver's side is also tested against a fake server in that package.
func TestQdrant(t *testing.T) {
	addr := strings.TrimPrefix(os.Getenv("STRATA_QDRANT_ADDR"), "qdrant://")
	if addr == "" {
		t.Skip("STRATA_QDRANT_ADDR is not set")
	}
	ctx := context.Background()
	name := fmt.Sprintf("env_test_%08x", rand.Uint32())
	u := fmt.Sprintf("qdrant://%s?collection=%s", addr, name)
	env, err := environment.Open(ctx, u, environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		cl, err := qc.NewClient(&qc.Config{Host: host, Port: p, APIKey: os.Getenv("QDRANT_API_KEY"), SkipCompatibilityCheck: true})
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer cl.Close()
		_ = cl.DeleteCollection(context.Background(), name)
	})
	if env.State != nil || !env.Created {
		t.Errorf("qdrant env: %+v", env)
	}
	h16 := environment.Record{Embedder: "hash-16", Dimension: 16}
	if env.Recorded != h16 {
		t.Skipf("the server keeps no collection metadata (before 1.16): %+v", env.Recorded)
	}
	put(t, env, "r1")
	_ = env.Close()
	env, err = environment.Open(ctx, u, environment.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if env.Memory.Embedder.Model() != "hash-16" {
		t.Errorf("reopened with %s", env.Memory.Embedder.Model())
	}
	_ = env.Close()
	_, err = environment.Open(ctx, u, environment.Options{Embedder: other{hashing.New(16)}})
	wantMismatch(t, err, h16, environment.Record{Embedder: "other-16", Dimension: 16})
}
