package pgurl_test

import (
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stratamem/strata/internal/pgurl"
)

func TestQuery(t *testing.T) {
	for _, c := range []struct {
		q    url.Values
		want string
	}{
		{nil, ""},
		{url.Values{}, ""},
		{url.Values{"a": {""}}, "a="},
		{url.Values{"sslmode": {"disable"}, "application_name": {"x"}}, "application_name=x&sslmode=disable"},
		// Values pgx would misread if encoded the url.Values way.
		{url.Values{"options": {"-c a=b+c"}, "x y": {"&"}}, "options=-c%20a%3Db%2Bc&x%20y=%26"},
		{url.Values{"k": {"AZaz09-._~"}}, "k=AZaz09-._~"},
		{url.Values{"k": {"/?#%\x00\xff"}}, "k=%2F%3F%23%25%00%FF"},
		{url.Values{"k": {"first", "second"}}, "k=first"},
	} {
		if got := pgurl.Query(c.q); got != c.want {
			t.Errorf("Query(%v) = %q, want %q", c.q, got, c.want)
		}
	}
}

// TestQueryPgx: pgx reads back the values Query wrote, byte for byte.
func TestQueryPgx(t *testing.T) {
	want := map[string]string{
		"application_name": "a b+c=d&e%f",
		"options":          "-c work_mem=64MB -c search_path=x,y",
		"search_path":      "\"$user\", public",
	}
	q := url.Values{}
	for k, v := range want {
		q.Set(k, v)
	}
	q.Set("sslmode", "disable")
	cfg, err := pgconn.ParseConfig("postgres://u@db.example:5433/strata?" + pgurl.Query(q))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if got := cfg.RuntimeParams[k]; got != v {
			t.Errorf("%s: pgx read %q, want %q", k, got, v)
		}
	}
	if cfg.TLSConfig != nil {
		t.Error("sslmode=disable not read")
	}
}
