package pgvector

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
	"github.com/stratamem/strata/vectorstore"
)

// commonParams are vectorstore.Open's own parameters.
var commonParams = []string{"collection", "dimension", "distance", "metadata_keys"}

// TestOneURLParams: every parameter of the vector side is one the state
// store knows to ignore, and every parameter of the state store one this
// driver reads or ignores, so neither refuses a URL made for both.
func TestOneURLParams(t *testing.T) {
	vector := append(slices.Clone(commonParams), DriverParams()...)
	for _, p := range vector {
		if p != "timeout" && !slices.Contains(postgres.VectorParams, p) {
			t.Errorf("vector parameter %q is not in postgres.VectorParams: the state store would pass it to pgx", p)
		}
	}
	for _, p := range postgres.VectorParams {
		if !slices.Contains(vector, p) {
			t.Errorf("postgres.VectorParams lists %q, which is no vector parameter", p)
		}
	}
	for _, p := range postgres.StateParams {
		if !slices.Contains(DriverParams(), p) && !slices.Contains(StateParams, p) {
			t.Errorf("state parameter %q is unknown to pgvector, which refuses it", p)
		}
	}
}

// TestOneURL: one URL, with parameters of both sides, opens a collection
// (vectorstore.Open) and the state store (storage.Open) of one database;
// each side refuses a bad value of the other's parameters.
func TestOneURL(t *testing.T) {
	pool := testPool(t, testDSN(t))
	name := fmt.Sprintf("oneurl_%08x", rand.Uint32())
	table := fmt.Sprintf("strata_state_oneurl_%08x", rand.Uint32())
	t.Cleanup(func() {
		for _, q := range []string{"DROP TABLE IF EXISTS " + pgx.Identifier{table}.Sanitize(),
			"DROP SEQUENCE IF EXISTS " + pgx.Identifier{table + "_revision_seq"}.Sanitize()} {
			if _, err := pool.Exec(ctx, q); err != nil {
				t.Error(err)
			}
		}
		if _, err := pool.Exec(ctx, "DELETE FROM strata_schema_migrations WHERE component = $1", "storage/postgres:"+table); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range map[string]string{
		"collection": name, "dimension": "4", "distance": "cosine", "metadata_keys": "lang",
		"index": "hnsw", "m": "8", "ef_construction": "32", "ef_search": "50", "exact": "false",
		"copy_threshold": "100", "timeout": "20s", "bulk_timeout": "5m", "defer_index": "false",
		"state_table": table, "application_name": "strata-one-url",
	} {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	one := u.String()

	coll, err := vectorstore.Open(ctx, one, nil)
	if err != nil {
		t.Fatalf("vectorstore.Open: %v", err)
	}
	t.Cleanup(func() { dropCollection(t, pool, name) })
	defer coll.Close()
	if d := driverOf(coll); d.opts.Timeout.String() != "20s" || d.opts.BulkTimeout.String() != "5m0s" || d.opts.CopyThreshold != 100 || d.opts.EfSearch != 50 {
		t.Errorf("collection options %+v", d.opts)
	}
	if err := coll.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0, 0, 0}, Metadata: map[string]string{"lang": "en"}}); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, one)
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	defer st.Close()
	ps := st.(*postgres.Store)
	if want := (pgx.Identifier{table}).Sanitize(); ps.Table() != want {
		t.Errorf("state table %s, want %s (state_table)", ps.Table(), table)
	}
	var app string
	if err := ps.Pool().QueryRow(ctx, "SHOW application_name").Scan(&app); err != nil || app != "strata-one-url" {
		t.Errorf("state store's application_name %q, %v", app, err)
	}
	if _, err := st.Put(ctx, storage.Key{Scope: "global", Layer: "oneurl", Name: "state"}, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}

	// A bad value of either side's parameter fails on both sides, before
	// connecting.
	for _, kv := range [][2]string{{"state_table", "no-dashes"}, {"defer_index", "sometimes"}, {"bulk_timeout", "forever"}, {"m", "x"}} {
		bq := u.Query()
		bq.Set(kv[0], kv[1])
		bu := *u
		bu.RawQuery = bq.Encode()
		if _, err := vectorstore.Open(ctx, bu.String(), nil); !errors.Is(err, vectorstore.ErrInvalidArgument) {
			t.Errorf("vectorstore.Open with %s=%s: %v, want ErrInvalidArgument", kv[0], kv[1], err)
		}
		if _, err := storage.Open(ctx, bu.String()); !errors.Is(err, storage.ErrInvalidURL) {
			t.Errorf("storage.Open with %s=%s: %v, want ErrInvalidURL", kv[0], kv[1], err)
		}
	}
}
