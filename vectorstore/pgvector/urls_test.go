package pgvector

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// TestURLRejectedLocally needs no server: every URL here is refused before
// a connection is attempted (the port is one nothing listens on, so a
// connection attempt would show up as an untyped error instead), with a
// typed error naming the parameter, and without showing the password.
func TestURLRejectedLocally(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for q, field := range map[string]string{
		"exakt=true":                            "exakt", // used to reach the server as a setting: "failed to connect"
		"pool_max_conns=0":                      "pool_max_conns",
		"pool_max_conns=-3":                     "pool_max_conns",
		"pool_max_conns=many":                   "pool_max_conns",
		"pool_min_conns=-1":                     "pool_min_conns",
		"pool_min_conns=5&pool_max_conns=2":     "pool_min_conns",
		"pool_max_conn_lifetime=forever":        "pool_max_conn_lifetime",
		"pool_health_check_period=-1s":          "pool_health_check_period",
		"connect_timeout=-1":                    "connect_timeout",
		"connect_timeout=5s":                    "connect_timeout",
		"sslmode=bogus":                         "sslmode",
		"target_session_attrs=master":           "target_session_attrs",
		"default_query_exec_mode=fast":          "default_query_exec_mode",
		"statement_cache_capacity=-1":           "statement_cache_capacity",
		"port=70000":                            "port",
		"min_protocol_version=4":                "min_protocol_version",
		"channel_binding=yes":                   "channel_binding",
		"exact=maybe":                           "exact",
		"m=x":                                   "m",
		"timeout=-1s":                           "timeout",
		"timeout=0s":                            "timeout",
		"bulk_timeout=0s":                       "bulk_timeout",
		"bulk_timeout=10":                       "bulk_timeout",
		"defer_index=perhaps":                   "defer_index",
		"state_table=a.b.c":                     "state_table",
		"state_table=1state":                    "state_table",
		"ef_search=":                            "ef_search",
		"schema=a&schema=b":                     "schema",
		"collection=a;b":                        "url",
		"application_name=x&application_name=y": "application_name",
		"SSLMODE=disable":                       "SSLMODE",
		"work_mem=64MB":                         "work_mem",
		"ssl=true":                              "ssl",
		"application_name=a%00b":                "application_name",
	} {
		_, err := vectorstore.Open(ctx, "postgres://u:hunter2@127.0.0.1:1/db?dimension=2&"+q, nil)
		var e *driver.Error
		if !errors.As(err, &e) || e.Code != driver.CodeInvalidArgument || e.Field != field {
			t.Errorf("?%s: %v, want CodeInvalidArgument on %q", q, err, field)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("?%s: %v shows the password", q, err)
		}
	}
}

// TestURLPassesConnectionParameters: the driver's parameters become
// Options, the connection parameters reach pgx unchanged.
func TestURLPassesConnectionParameters(t *testing.T) {
	u, err := url.Parse("postgres://u:pw@db.example:5433/strata?schema=mem&ef_search=80&exact=true&timeout=5s" +
		"&sslmode=require&application_name=strata-test&pool_max_conns=7&pool_min_conns=1&pool_max_conn_idle_time=2m" +
		"&connect_timeout=3&default_query_exec_mode=exec&options=-c%20work_mem%3D64MB&search_path=mem")
	if err != nil {
		t.Fatal(err)
	}
	o, conn, err := parseURL(u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Schema != "mem" || o.EfSearch != 80 || !o.Exact || o.Timeout != 5*time.Second || !o.ClosePool {
		t.Fatalf("Options %+v", o)
	}
	for _, k := range driverParams {
		if strings.Contains(conn, k+"=") && k != "timeout" {
			t.Fatalf("driver parameter %s passed to pgx: %s", k, conn)
		}
	}
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.ConnConfig
	if cfg.MaxConns != 7 || cfg.MinConns != 1 || cfg.MaxConnIdleTime != 2*time.Minute || cc.Host != "db.example" || cc.Port != 5433 ||
		cc.Database != "strata" || cc.User != "u" || cc.Password != "pw" || cc.ConnectTimeout != 3*time.Second || cc.TLSConfig == nil {
		t.Fatalf("pgx config: max %d min %d idle %v host %s port %d db %s user %s timeout %v tls %v",
			cfg.MaxConns, cfg.MinConns, cfg.MaxConnIdleTime, cc.Host, cc.Port, cc.Database, cc.User, cc.ConnectTimeout, cc.TLSConfig != nil)
	}
	rp := cc.RuntimeParams
	if rp["application_name"] != "strata-test" || rp["options"] != "-c work_mem=64MB" || rp["search_path"] != "mem" || len(rp) != 3 {
		t.Fatalf("run-time parameters %v", rp)
	}
	if !strings.Contains(strings.Join(PgxParams(), ","), "pool_max_conns") {
		t.Fatal("PgxParams misses pool_max_conns")
	}
}

// TestURLOpenerDefaults: a configured URLOpener's options are the
// defaults a URL parameter overrides; the portable part is not read.
func TestURLOpenerDefaults(t *testing.T) {
	u, err := url.Parse("postgres://db/strata?exact=false&ef_search=90")
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Options: vectorstore.Options{Dimension: 9}, Schema: "mem", Exact: true, EfSearch: 10, Index: IndexNone}
	o, _, err := parseURL(u, base)
	if err != nil {
		t.Fatal(err)
	}
	if o.Schema != "mem" || o.Index != IndexNone || o.Exact || o.EfSearch != 90 || !o.ClosePool || o.Dimension != 0 {
		t.Fatalf("Options %+v", o)
	}
}

// TestURLBulkParams: defer_index and bulk_timeout reach Options; the state
// store's state_table is checked and kept from pgx.
func TestURLBulkParams(t *testing.T) {
	u, err := url.Parse("postgres://db/strata?defer_index=true&bulk_timeout=7m&state_table=app.state&sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	o, conn, err := parseURL(u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !o.DeferIndex || o.BulkTimeout != 7*time.Minute {
		t.Fatalf("Options %+v", o)
	}
	if strings.Contains(conn, "state_table") || strings.Contains(conn, "defer_index") || !strings.Contains(conn, "sslmode=disable") {
		t.Fatalf("connection string %q", conn)
	}
}
