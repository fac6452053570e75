package postgres_test

import (
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
	"github.com/stratamem/strata/storage/storagetest"
)

// A server (or role) whose default isolation is stricter than READ
// COMMITTED fails a write that races another with SQLSTATE 40001 instead
// of matching no row: the store must still report it as a conflict, so
// compare-and-swap loops work whatever the server's default.
func TestConcurrentWritesUnderStricterIsolation(t *testing.T) {
	for _, level := range []string{"repeatable read", "serializable"} {
		t.Run(level, func(t *testing.T) {
			admin := adminPool(t)
			cfg, err := pgxpool.ParseConfig(testDSN(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = level
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			tables := map[storage.Store]string{}
			var mu sync.Mutex
			newStore := func(t *testing.T, table string) storage.Store {
				s, err := postgres.New(ctx, pool, postgres.Options{Table: table})
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				tables[s] = table
				mu.Unlock()
				return s
			}
			// The whole suite: its concurrent increments and creates are
			// where 40001 shows.
			storagetest.Run(t, storagetest.Harness{
				New: func(t *testing.T) storage.Store { return newStore(t, freshTable(t, admin)) },
				Reopen: func(t *testing.T, old storage.Store) storage.Store {
					mu.Lock()
					table := tables[old]
					mu.Unlock()
					return newStore(t, table)
				},
			})
		})
	}
}
