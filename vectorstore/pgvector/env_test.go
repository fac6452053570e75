package pgvector

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// testDSN returns the DSN of the test server started by scripts/pg.sh. Without
// one the test is skipped, unless STRATA_REQUIRE_PG=1 (make test) turns the
// skip into a failure so a missing server cannot pass silently.
func testDSN(t testing.TB) string {
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

// testPool returns a pool on the test server, configured as Open by URL
// configures its own.
func testPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.BuildContextWatcherHandler = CancelOnServer
	return testPoolFromConfig(t, cfg)
}

func testPoolFromConfig(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// dropCollection removes a collection's table, catalog row and migration
// rows (test cleanup; the driver interface has no drop).
func dropCollection(t testing.TB, p *pgxpool.Pool, name string) {
	t.Helper()
	if err := DropCollection(context.Background(), p, "", name); err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}
