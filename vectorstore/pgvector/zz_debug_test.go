package pgvector

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stratamem/strata/vectorstore/driver"
)

// temporary: EXPLAIN ANALYZE the ranking of bench queries.
func TestDebugExplain(t *testing.T) {
	if os.Getenv("DEBUG_EXPLAIN") == "" {
		t.Skip()
	}
	pool := testPool(t, testDSN(t))
	d, err := OpenDriver(ctx, pool, driver.Config{Name: benchDataName}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := d.(*collection)
	r := rand.New(rand.NewPCG(31, 32))
	z := benchZipf(r)
	for i := 0; i < 3; i++ {
		q := map[string]float64{}
		for len(q) < 5 {
			q[benchWord(z.Uint64())] = 1
		}
		tq := driver.TermQuery{Terms: q, K: 50, K1: 1.2, B: 0.75, Filter: driver.Filter{Layer: "semantic", Kind: "message", Resource: "u1"}}
		if os.Getenv("DEBUG_IDS") != "" {
			for j := 0; j < 100; j++ {
				tq.Filter.IDs = append(tq.Filter.IDs, fmt.Sprintf("u1-m%06d", r.IntN(benchPerResource)))
			}
		}
		debugSQL = func(sql string, args []any) {
			err := c.withConn(ctx, true, func(conn *pgx.Conn) error {
				rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
				if err != nil {
					return err
				}
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				fmt.Println(strings.Join(lines, "\n"))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		fmt.Println("QUERY", q)
		if _, err := c.SearchTerms(ctx, tq); err != nil {
			t.Fatal(err)
		}
		debugSQL = nil
	}
}
