package pgvector

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	pgv "github.com/pgvector/pgvector-go"

	"github.com/stratamem/strata/internal/ctxutil"
	"github.com/stratamem/strata/vectorstore/driver"
)

// The bulk path of Upsert, for batches of Options.CopyThreshold records or
// more (every batch of a DeferIndex handle), in one READ COMMITTED
// transaction:
//
//  1. COPY (binary) the batch into a temporary table and merge it with one
//     INSERT ... ON CONFLICT DO UPDATE in id order, which reports for each
//     row whether it inserted or updated it (xmax = 0 on a row version
//     this statement inserted). Into an empty table, whose indexes the
//     load drops under the table's lock, the batch is COPYed straight into
//     the table.
//  2. The term index: the postings of the records just inserted cannot
//     exist (a record's postings are written and deleted with its row,
//     under its row lock, and this transaction created the row), so they
//     are computed here, in Go, from the batch, and COPYed straight into
//     the postings table; so are their statistics' deltas, aggregated per
//     statistics row (a term's count, largest weight and smallest document
//     length in a thread and in its resource), into a temporary table,
//     with one row per new document for the exact numeric lengths. One
//     statement (bulkReconcileSQL) then reconciles the updated records as
//     every write does and applies all the deltas to the statistics in key
//     order.
//
// Against the statement every write used before (postings recomputed in
// SQL from the terms column and compared with the stored ones), step 2
// skips the comparison, the full join and the window sums of the new
// records, which dominated a load (34 s of a 58 s load of 20,000 records
// with 24 terms each, on the test server). JIT compilation is switched off
// for the transaction: the planner, which cannot estimate id = ANY($1) of
// thousands of ids, prices these statements high enough to compile them,
// which cost 3.3 s of an 11 s reconciliation and saves nothing. Then the
// indexes: see Options.DeferIndex, and the package documentation (Writes).
//
// Where a 10,000-record batch of chat messages (512-d vectors, about 100
// terms each: a million postings) spent its time before the postings went
// straight to their table and their statistics were aggregated here, under
// auto_explain on the loaded test server: 11 s in bulkReconcileSQL, of
// which 4.3 s moving the postings from their temporary table (itself 2.2
// s to COPY) and 4.4 s expanding and aggregating one delta row per posting
// and roll-up (two million rows) into 160,000 statistics rows; 2.2 s
// COPYing the records. Without the instrumentation the gain is smaller
// than those shares suggest: BenchmarkBulkMigrate, run back to back,
// measured 89 s of batches against 100 s for 100,000 records.

const (
	// jitOff is the first statement of every write transaction (see
	// above; the unnest path and the conditional writes too, where the
	// reconciliation of a 500-record batch was compiled as well).
	jitOff = "SELECT set_config('jit', 'off', true)"

	qTempTerms = `CREATE TEMP TABLE strata_vec_load_docs (
	layer text COLLATE "C", kind text COLLATE "C", resource text COLLATE "C", thread text COLLATE "C", dl double precision) ON COMMIT DROP;
CREATE TEMP TABLE strata_vec_load_stats (
	layer text COLLATE "C", term text COLLATE "C", resource text COLLATE "C", thread text COLLATE "C", kind text COLLATE "C",
	n bigint, maxtf real, mindl double precision) ON COMMIT DROP`
)

// createTixSQL is the postings index as the latest migration step that
// defines it (sketchSQL) creates it, for a bulk load that dropped it.
// TestDeferIndex compares the two definitions.
const createTixSQL = `CREATE INDEX IF NOT EXISTS {idx_tix} ON {terms} (layer, term, resource, thread, kind) INCLUDE (id, tf, dl, sketch)`

var (
	loadTermCols = []string{"id", "term", "tf", "dl", "sketch", "layer", "kind", "resource", "thread"}
	loadDocCols  = []string{"layer", "kind", "resource", "thread", "dl"}
	loadStatCols = []string{"layer", "term", "resource", "thread", "kind", "n", "maxtf", "mindl"}
	recordCols   = strings.Split(writeCols+", embedding", ", ")
)

// clientTerms reports whether the postings of recs can be computed here
// exactly as the reconciliation computes them from the terms column:
// terms that are valid UTF-8 without NUL (jsonb keeps them byte for byte;
// encoding/json would replace invalid bytes). vectorstore validates every
// record so; a batch that bypassed it takes the SQL path.
func clientTerms(recs []driver.Record) bool {
	for i := range recs {
		for t := range recs[i].Terms {
			if !utf8.ValidString(t) || strings.IndexByte(t, 0) >= 0 {
				return false
			}
		}
	}
	return true
}

// upsertCopy writes a large batch (see the top of this file).
func (c *collection) upsertCopy(ctx context.Context, conn *pgx.Conn, recs []driver.Record, ids []string, z *zeroKeys) error {
	sketches := make([][]byte, len(recs))
	for i := range recs {
		sketches[i] = termSketch(recs[i].Terms)
	}
	client := clientTerms(recs)
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		// jitOff, and memory for the sorts and aggregations of the
		// statistics (half a million rows for 10,000 records), which spill
		// to disk under the default 4MB.
		if _, err := tx.Exec(ctx, "SELECT set_config('jit', 'off', true), set_config('work_mem', '256MB', true)"); err != nil {
			return err
		}
		// Loading an empty table: build the HNSW graph and the postings'
		// index once after the load instead of inserting every row into
		// them (measured at 10k x 512-d: about 2 s against 7 s for the
		// graph). Dropping an index takes its table's exclusive lock until
		// commit, which only an empty table can afford (readers wait for
		// the load, nobody sees it half done), or a load that asked for it
		// (DeferIndex; Close builds them).
		var empty, direct, drop bool
		if err := tx.QueryRow(ctx, c.qEmpty).Scan(&empty); err != nil {
			return err
		}
		if empty || c.opts.DeferIndex {
			if err := tx.QueryRow(ctx, c.qIndexesPresent, !c.hnsw).Scan(&drop); err != nil {
				return err
			}
			drop = drop || empty
		}
		if drop {
			// The records table first, as every writer locks it (its
			// rows) before the postings: writers then wait for the load
			// instead of holding a row this load needs while waiting
			// for the postings table, a deadlock. A reader waits only
			// for the HNSW drop.
			if _, err := tx.Exec(ctx, c.qLockTable); err != nil {
				return err
			}
			if c.hnsw {
				if _, err := tx.Exec(ctx, c.qDropHNSW); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, c.qDropTix); err != nil {
				return err
			}
			// Still empty now that the load holds the table's lock:
			// nothing can conflict, so COPY straight into the table and
			// skip the temporary table and the merge.
			if err := tx.QueryRow(ctx, c.qEmpty).Scan(&direct); err != nil {
				return err
			}
		}
		src := pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
			r := &recs[i]
			return []any{r.ID, r.Layer, r.Kind, r.Scope.Thread, r.Scope.Resource, r.Text, metaJSON(r.Metadata),
				tstz(r.CreatedAt), tstz(r.ValidFrom), tstz(r.ValidTo), termsJSON(r.Terms), sketches[i], pgv.NewVector(r.Vector)}, nil
		})
		// inserted[i]: recs[i] is new (this transaction created its row).
		inserted := make([]bool, len(recs))
		if direct {
			if _, err := tx.CopyFrom(ctx, c.n.ident(), recordCols, src); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
			for i := range inserted {
				inserted[i] = true
			}
		} else {
			if _, err := tx.Exec(ctx, c.qTemp); err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"strata_vec_load"}, recordCols, src); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
			rows, err := tx.Query(ctx, c.qMergeReturning)
			if err != nil {
				return err
			}
			var id string
			var ins bool
			_, err = pgx.ForEachRow(rows, []any{&id, &ins}, func() error {
				if i, ok := slices.BinarySearch(ids, id); ok && ins {
					inserted[i] = true
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if err := c.indexTermsBulk(ctx, tx, recs, ids, sketches, inserted, client, z); err != nil {
			return fmt.Errorf("index terms: %w", err)
		}
		if drop && !c.opts.DeferIndex {
			return c.buildIndexes(ctx, tx)
		}
		return nil
	})
	return err
}

// indexTermsBulk brings the term index in line with a bulk-loaded batch:
// the records marked inserted get their postings from recs (when client
// allows it), the others are reconciled from the terms column.
func (c *collection) indexTermsBulk(ctx context.Context, tx pgx.Tx, recs []driver.Record, ids []string, sketches [][]byte,
	inserted []bool, client bool, z *zeroKeys) error {
	var reconcile []string // ids whose postings SQL reconciles
	newDocs := 0
	for i := range recs {
		switch {
		case !client || !inserted[i]:
			reconcile = append(reconcile, ids[i])
		case len(recs[i].Terms) > 0:
			newDocs++
		}
	}
	if newDocs == 0 {
		if len(reconcile) == 0 {
			return nil
		}
		return tx.QueryRow(ctx, c.qReconcile, reconcile).Scan(z.scanDest()...)
	}
	if _, err := tx.Exec(ctx, qTempTerms); err != nil {
		return err
	}
	// Postings in (id, term) order, the primary key's: the rows of a
	// record are then adjacent in its btree. They go straight into the
	// postings table: nobody else can write postings of records this
	// transaction created (see the top of this file), so there is no
	// conflict to resolve, and a temporary table would be written and
	// read once more for nothing.
	var docs [][]any
	stats := map[statKey]*statDelta{}
	add := func(k statKey, tf float32, dl float64) {
		d := stats[k]
		if d == nil {
			stats[k] = &statDelta{n: 1, maxtf: tf, mindl: dl}
			return
		}
		d.n++
		d.maxtf = max(d.maxtf, tf)
		d.mindl = min(d.mindl, dl)
	}
	i, j := 0, 0
	var terms []string
	var dl float64
	next := func() ([]any, error) {
		for {
			if i >= len(recs) {
				return nil, nil
			}
			r := &recs[i]
			if !client || !inserted[i] || len(r.Terms) == 0 {
				i++
				continue
			}
			if j == 0 {
				terms = terms[:0]
				for t := range r.Terms {
					terms = append(terms, t)
				}
				slices.Sort(terms) // byte order, as COLLATE "C" and Terms.Len
				dl = r.Terms.Len()
				docs = append(docs, []any{r.Layer, r.Kind, r.Scope.Resource, r.Scope.Thread, dl})
			}
			t := terms[j]
			tf := r.Terms[t]
			// The term's statistics rows: the resource's roll-up (empty
			// thread) and, for a record in a thread, the thread's.
			add(statKey{r.Layer, t, r.Scope.Resource, "", r.Kind}, tf, dl)
			if r.Scope.Thread != "" {
				add(statKey{r.Layer, t, r.Scope.Resource, r.Scope.Thread, r.Kind}, tf, dl)
			}
			row := []any{r.ID, t, tf, dl, sketches[i], r.Layer, r.Kind, r.Scope.Resource, r.Scope.Thread}
			if j++; j == len(terms) {
				i, j = i+1, 0
			}
			return row, nil
		}
	}
	if _, err := tx.CopyFrom(ctx, c.n.identOf("_terms"), loadTermCols, pgx.CopyFromFunc(next)); err != nil {
		return fmt.Errorf("copy postings: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"strata_vec_load_docs"}, loadDocCols, pgx.CopyFromRows(docs)); err != nil {
		return fmt.Errorf("copy documents: %w", err)
	}
	rows := make([][]any, 0, len(stats))
	for k, d := range stats {
		rows = append(rows, []any{k.layer, k.term, k.resource, k.thread, k.kind, d.n, d.maxtf, d.mindl})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"strata_vec_load_stats"}, loadStatCols, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy statistics: %w", err)
	}
	return tx.QueryRow(ctx, c.qBulkReconcile, reconcile).Scan(z.scanDest()...)
}

// statKey is the key of a statistics row, statDelta what a batch of new
// documents adds to a term's row: n postings, the largest weight and the
// smallest document length among them.
type (
	statKey struct {
		layer, term, resource, thread, kind string
	}
	statDelta struct {
		n     int64
		maxtf float32
		mindl float64
	}
)

// identOf is the collection's table with suffix (its term tables) as a pgx
// identifier, for COPY.
func (n *names) identOf(suffix string) pgx.Identifier {
	id := n.ident()
	id[len(id)-1] += suffix
	return id
}

// buildIndexes creates the indexes a bulk load dropped, the HNSW index
// and the postings' (layer, term, ...) index, when they are missing, and
// refreshes the planner's statistics, in tx. The caller holds the records
// table's lock or the migration lock, so nobody builds them twice.
func (c *collection) buildIndexes(ctx context.Context, tx pgx.Tx) error {
	// Room for the whole graph in memory: pgvector builds much faster
	// when it fits (its own advice), and the setting ends with the
	// transaction.
	if _, err := tx.Exec(ctx, "SET LOCAL maintenance_work_mem = '1GB'"); err != nil {
		return err
	}
	// Each step's time is logged: the build is most of a large load, and
	// an operator sizing one needs to know which part.
	var hnswTime time.Duration
	start := time.Now()
	if c.hnsw {
		if _, err := tx.Exec(ctx, c.qCreateHNSW); err != nil {
			return fmt.Errorf("build hnsw index: %w", err)
		}
		hnswTime = time.Since(start)
	}
	if _, err := tx.Exec(ctx, c.qCreateTix); err != nil {
		return fmt.Errorf("build postings index: %w", err)
	}
	tixTime := time.Since(start) - hnswTime
	// Fresh statistics, or the planner prices the new indexes against
	// the tables as they were before the load and scans instead.
	if _, err := tx.Exec(ctx, c.qAnalyze); err != nil {
		return fmt.Errorf("analyze after bulk load: %w", err)
	}
	slog.Info("pgvector: built the indexes of a bulk load", "collection", c.info.Name,
		"hnsw", hnswTime.Round(time.Millisecond), "postings", tixTime.Round(time.Millisecond),
		"analyze", (time.Since(start) - hnswTime - tixTime).Round(time.Millisecond))
	return nil
}

// finishDeferred builds the indexes of a DeferIndex handle if they are
// missing (this handle or an interrupted load dropped them), under the
// migration lock (two handles closing at once build them once), bounded
// by BulkTimeout.
func (c *collection) finishDeferred() error {
	if !c.opts.DeferIndex {
		return nil
	}
	ctx, cancel := ctxutil.Bound(context.Background(), c.opts.BulkTimeout)
	defer cancel()
	err := c.withConn(ctx, false, func(conn *pgx.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := lockMigrations(ctx, tx); err != nil {
				return err
			}
			var complete bool
			if err := tx.QueryRow(ctx, c.qIndexesComplete, !c.hnsw).Scan(&complete); err != nil {
				return err
			}
			if complete {
				return nil
			}
			slog.Info("pgvector: building the indexes of a deferred bulk load", "collection", c.info.Name)
			return c.buildIndexes(ctx, tx)
		})
	})
	return c.fail(ctx, "build deferred indexes", err)
}
