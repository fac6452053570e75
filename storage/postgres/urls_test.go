package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
)

// TestOpenByURL: storage.Open takes the URL memctl and vectorstore.Open
// take, the vector side's parameters included, and opens the state table.
func TestOpenByURL(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range map[string]string{"collection": "memories", "dimension": "64", "distance": "cosine",
		"metadata_keys": "a,b", "index": "hnsw", "ef_search": "100", "exact": "true", "timeout": "20s",
		"application_name": "strata-url-test"} {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	st, err := storage.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps, ok := st.(*postgres.Store)
	if !ok {
		t.Fatalf("opened %T", st)
	}
	if ps.Table() != `"strata_state"` {
		t.Errorf("table %s", ps.Table())
	}
	var app string
	if err := ps.Pool().QueryRow(ctx, "SHOW application_name").Scan(&app); err != nil || app != "strata-url-test" {
		t.Errorf("application_name = %q, %v (connection parameters reach pgx)", app, err)
	}
	key := storage.Key{Scope: "global", Layer: "url-test", Name: "state"}
	e, err := st.Get(ctx, key)
	if err == nil {
		_ = st.Delete(ctx, key, e.Revision)
	}
	rev, err := st.Put(ctx, key, []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, key, rev); err != nil {
		t.Fatal(err)
	}
	// Through the postgresql spelling too.
	u.Scheme = "postgresql"
	st2, err := storage.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	_ = st2.Close()
}

// TestOpenByURLStateTable: state_table names the table; the vector side's
// bulk parameters and distance aliases are checked and ignored, and bad
// values of either side's parameters are refused before connecting.
func TestOpenByURLStateTable(t *testing.T) {
	admin := adminPool(t)
	table := freshTable(t, admin)
	u, err := url.Parse(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range map[string]string{"state_table": table, "bulk_timeout": "5m", "defer_index": "true", "distance": "cos"} {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	st, err := storage.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.(*postgres.Store).Table(); got != `"`+table+`"` {
		t.Errorf("table %s, want %s", got, table)
	}
	for _, kv := range [][2]string{{"state_table", "a-b"}, {"state_table", "x.y.z"}, {"bulk_timeout", "0s"}, {"defer_index", "maybe"}, {"timeout", "soon"}} {
		q := u.Query()
		q.Set(kv[0], kv[1])
		bad := *u
		bad.RawQuery = q.Encode()
		if _, err := storage.Open(ctx, bad.String()); !errors.Is(err, storage.ErrInvalidURL) {
			t.Errorf("%s=%s: %v, want ErrInvalidURL", kv[0], kv[1], err)
		}
	}
}
