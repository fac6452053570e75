package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
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

// adminPool is a pool for test bookkeeping (dropping tables, terminating
// backends), separate from the pools under test.
func adminPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// freshTable returns an unused table name and drops the table, its sequence
// and its migration rows when the test ends.
func freshTable(t testing.TB, admin *pgxpool.Pool) string {
	t.Helper()
	name := fmt.Sprintf("strata_state_t%08x", rand.Uint32())
	t.Cleanup(func() { dropTable(t, admin, name) })
	return name
}

func dropTable(t testing.TB, admin *pgxpool.Pool, name string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + pgx.Identifier{name}.Sanitize(),
		"DROP SEQUENCE IF EXISTS " + pgx.Identifier{name + "_revision_seq"}.Sanitize(),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Errorf("cleanup %s: %v", q, err)
		}
	}
	if _, err := admin.Exec(ctx, "DELETE FROM strata_schema_migrations WHERE component = $1", "storage/postgres:"+name); err != nil {
		t.Errorf("cleanup migrations of %s: %v", name, err)
	}
}
