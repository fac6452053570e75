package pgvector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stratamem/strata/vectorstore/driver"
)

// The lexical index: Record.Terms is stored as a jsonb object in the
// records table (what Get and List return) and indexed, in the transaction
// of every write, into the postings and statistics tables of termsSQL.
//
// Writes follow one rule: the postings of a record are only changed by a
// transaction that holds the lock of its row in the records table, taken
// by the write's first statement (the INSERT, UPDATE or DELETE of the
// record), and they are brought in line with the record by a second
// statement, the reconciliation (qReconcile), which runs after the locks
// are held. Under READ COMMITTED that statement's snapshot therefore sees
// the postings the last writer of each record committed, so the difference
// between them and the record as this transaction leaves it is exact: it
// is applied to the postings and, as deltas, to the statistics. The
// statistics rows are the only rows that writers of different records
// share; they are upserted in one statement in key order, and every
// writer takes its record locks (in id order) before any of them, so two
// writers never wait for each other in a cycle. A conditional write that
// conflicts holds no lock, but then the records and postings its snapshot
// sees are a committed, consistent pair and the reconciliation changes
// nothing.

// termsJSON encodes a document for the terms column; nil (SQL NULL) for a
// record without one. encoding/json writes float32 values in their
// shortest form that parses back to the same float32, and jsonb keeps
// numbers as exact decimals, so weights round trip bit for bit.
func termsJSON(t driver.Terms) *string {
	if len(t) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]float32(t)) // finite weights always marshal
	s := string(b)
	return &s
}

func decodeTerms(id string, b []byte) (driver.Terms, error) {
	if b == nil {
		return nil, nil
	}
	if m, ok := flatFloat32s(b); ok {
		if len(m) == 0 {
			return nil, nil
		}
		return driver.Terms(m), nil
	}
	var t driver.Terms
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, driver.Errorf(driver.CodeCorrupt, "read", "terms", "record %q: terms are not an object of numbers: %v", id, err)
	}
	if len(t) == 0 {
		return nil, nil
	}
	return t, nil
}

// reconcileSQL brings the postings of the records $1 in line with their
// terms column and applies the difference to the statistics (see the
// comment at the top of this file). It returns the keys of the statistics
// rows it left at n = 0, for sweepSQL.
//
// A document's length is the sum of its weights in float8, added in byte
// order of the terms like driver.Terms.Len. Postings that did not change
// (same weight, length and corpus fields) are not touched, so rewriting a
// record with the same document writes no index row.
const reconcileTmpl = `WITH
cur AS (
	SELECT r.id, t.key COLLATE "C" AS term, t.value::real AS tf, r.term_sketch AS sketch,
		r.layer COLLATE "C" AS layer, r.kind COLLATE "C" AS kind,
		r.resource COLLATE "C" AS resource, r.thread COLLATE "C" AS thread
	FROM {table} r CROSS JOIN LATERAL jsonb_each(r.terms) t
	WHERE r.id = ANY($1::text[]) AND r.terms IS NOT NULL
),
np AS (
	SELECT id, term, tf, sum(tf::float8) OVER (PARTITION BY id ORDER BY term ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS dl,
		sketch, layer, kind, resource, thread
	FROM cur
),
op AS (
	SELECT id, term, tf, dl, sketch, layer, kind, resource, thread FROM {terms} WHERE id = ANY($1::text[])
),
ch AS (
	SELECT coalesce(n.id, o.id) AS id, coalesce(n.term, o.term) AS term, n.id IS NOT NULL AS isnew, o.id IS NOT NULL AS isold,
		n.tf AS ntf, n.dl AS ndl, n.sketch AS nsketch, n.layer AS nlayer, n.kind AS nkind, n.resource AS nresource, n.thread AS nthread,
		o.layer AS olayer, o.kind AS okind, o.resource AS oresource, o.thread AS othread
	FROM np n FULL JOIN op o ON o.id = n.id AND o.term = n.term
	WHERE n.id IS NULL OR o.id IS NULL
		OR (n.tf, n.dl, n.sketch, n.layer, n.kind, n.resource, n.thread) IS DISTINCT FROM (o.tf, o.dl, o.sketch, o.layer, o.kind, o.resource, o.thread)
),
del AS (
	DELETE FROM {terms} p USING ch WHERE NOT ch.isnew AND p.id = ch.id AND p.term = ch.term
),
ins AS (
	INSERT INTO {terms} AS p (id, term, tf, dl, sketch, layer, kind, resource, thread)
	SELECT id, term, ntf, ndl, nsketch, nlayer, nkind, nresource, nthread FROM ch WHERE isnew
	ORDER BY id, term
	ON CONFLICT (id, term) DO UPDATE SET tf = EXCLUDED.tf, dl = EXCLUDED.dl, sketch = EXCLUDED.sketch, layer = EXCLUDED.layer,
		kind = EXCLUDED.kind, resource = EXCLUDED.resource, thread = EXCLUDED.thread
),
docs AS (SELECT DISTINCT id FROM ch),
delta AS (
	SELECT o.layer, o.kind, o.resource, o.thread, ''::text COLLATE "C" AS term, -1 AS dn, -(o.dl::numeric) AS dlen,
		NULL::real AS tf, NULL::float8 AS dl
	FROM (SELECT DISTINCT ON (id) id, layer, kind, resource, thread, dl FROM op WHERE id IN (SELECT id FROM docs)) o
	UNION ALL
	SELECT n.layer, n.kind, n.resource, n.thread, '', 1, n.dl::numeric, NULL, NULL
	FROM (SELECT DISTINCT ON (id) id, layer, kind, resource, thread, dl FROM np WHERE id IN (SELECT id FROM docs)) n
	UNION ALL
	SELECT olayer, okind, oresource, othread, term, -1, 0, NULL, NULL FROM ch WHERE isold
	UNION ALL
	SELECT nlayer, nkind, nresource, nthread, term, 1, 0, ntf, ndl FROM ch WHERE isnew{bulk_delta}
),
agg AS (
	SELECT layer, term, resource, thread, kind, sum(dn) AS dn, sum(dlen) AS dlen, max(tf) AS maxtf, min(dl) AS mindl
	FROM (
		SELECT d.layer, d.term, d.resource, v.thread, d.kind, d.dn, d.dlen, d.tf, d.dl
		FROM delta d CROSS JOIN LATERAL (SELECT ''::text COLLATE "C" UNION ALL SELECT d.thread WHERE d.thread <> '') v(thread){bulk_agg}
	) x
	GROUP BY layer, term, resource, thread, kind
	HAVING sum(dn) <> 0 OR sum(dlen) <> 0 OR count(tf) > 0
),
up AS (
	INSERT INTO {tstats} AS s (layer, term, resource, thread, kind, n, len, maxtf, mindl)
	SELECT layer, term, resource, thread, kind, dn, dlen, maxtf, mindl FROM agg
	ORDER BY layer, term, resource, thread, kind
	ON CONFLICT (layer, term, resource, thread, kind) DO UPDATE SET
		n = s.n + EXCLUDED.n, len = s.len + EXCLUDED.len,
		maxtf = CASE WHEN s.n = 0 THEN EXCLUDED.maxtf ELSE greatest(s.maxtf, EXCLUDED.maxtf) END,
		mindl = CASE WHEN s.n = 0 THEN EXCLUDED.mindl ELSE least(s.mindl, EXCLUDED.mindl) END
	RETURNING layer, term, resource, thread, kind, n
)
SELECT array_agg(layer), array_agg(term), array_agg(resource), array_agg(thread), array_agg(kind) FROM up WHERE n = 0`

// reconcileSQL is reconcileTmpl for the records $1, and bulkReconcileSQL
// adds, in the same statement, the statistics of the documents of records
// a bulk load has just inserted, whose postings the client computed and
// COPYed straight into {terms} (bulk.go): those records had no postings,
// so there is nothing to compare, and only their deltas join the others.
// They come in two temporary tables: strata_vec_load_docs, one row per
// document (its corpus fields and length, for the empty term's n and len,
// rolled up here like every delta), and strata_vec_load_stats, the term
// rows' deltas already aggregated by the client per statistics key,
// roll-ups included (n, maxtf, mindl: a count, a maximum and a minimum,
// exact in any order; the numeric len stays the server's to sum). The
// client's aggregation replaces the expansion and aggregation of one row
// per posting and roll-up here (two million rows for 10,000 chat
// messages, against 160,000 aggregated). The statistics are still
// upserted by one statement in key order (two statements could lock the
// same rows in two passes, and two bulk writers deadlock).
var (
	reconcileSQL     = strings.NewReplacer("{bulk_delta}", "", "{bulk_agg}", "").Replace(reconcileTmpl)
	bulkReconcileSQL = strings.NewReplacer("{bulk_delta}", `
	UNION ALL
	SELECT layer, kind, resource, thread, '', 1, dl::numeric, NULL, NULL FROM strata_vec_load_docs`, "{bulk_agg}", `
		UNION ALL
		SELECT layer, term, resource, thread, kind, n, 0, maxtf, mindl FROM strata_vec_load_stats`).Replace(reconcileTmpl)
)

// sweepSQL removes statistics rows that a write left at zero. It runs after
// the write committed, on its own, and never waits: rows another writer
// holds are skipped (SKIP LOCKED), so it cannot take part in a deadlock;
// the rows it locks are re-checked at zero on their latest version. A
// writer that then waits to raise a row deleted here inserts it afresh
// (INSERT ... ON CONFLICT retries). Rows at zero are harmless to searches
// (they add nothing), so a row skipped, or a sweep that fails, only leaves
// garbage behind.
const sweepSQL = `DELETE FROM {tstats} WHERE (layer, term, resource, thread, kind) IN (
	SELECT layer, term, resource, thread, kind FROM {tstats}
	WHERE n = 0 AND (layer, term, resource, thread, kind) IN
		(SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]))
	FOR UPDATE SKIP LOCKED)`

// rebuildSQL fills empty term tables from the records table: postings from
// every record's terms, then the statistics from the postings.
const rebuildSQL = `INSERT INTO {terms} (id, term, tf, dl, sketch, layer, kind, resource, thread)
SELECT id, term, tf, sum(tf::float8) OVER (PARTITION BY id ORDER BY term ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
	sketch, layer, kind, resource, thread
FROM (SELECT r.id, t.key COLLATE "C" AS term, t.value::real AS tf, r.term_sketch AS sketch, r.layer, r.kind, r.resource, r.thread
	FROM {table} r CROSS JOIN LATERAL jsonb_each(r.terms) t WHERE r.terms IS NOT NULL) x;
INSERT INTO {tstats} (layer, term, resource, thread, kind, n, len, maxtf, mindl)
SELECT d.layer, d.term, d.resource, v.thread, d.kind, count(*), sum(d.dlen), max(d.tf), min(d.dl)
FROM (
	SELECT layer, term, resource, thread, kind, 0::numeric AS dlen, tf, dl FROM {terms}
	UNION ALL
	SELECT layer, '', resource, thread, kind, dl::numeric, NULL, NULL
	FROM (SELECT DISTINCT ON (id) id, layer, resource, thread, kind, dl FROM {terms}) o
) d CROSS JOIN LATERAL (SELECT ''::text COLLATE "C" UNION ALL SELECT d.thread WHERE d.thread <> '') v(thread)
GROUP BY d.layer, d.term, d.resource, v.thread, d.kind`

// zeroKeys are the statistics keys a reconciliation left at n = 0.
type zeroKeys struct {
	layer, term, resource, thread, kind []string
}

func (z *zeroKeys) scanDest() []any {
	return []any{&z.layer, &z.term, &z.resource, &z.thread, &z.kind}
}

// sweep deletes the zero rows z names (see sweepSQL); its failure is not
// the write's.
func (c *collection) sweep(ctx context.Context, conn *pgx.Conn, z *zeroKeys) {
	if len(z.term) == 0 {
		return
	}
	_, _ = conn.Exec(ctx, c.qSweep, z.layer, z.term, z.resource, z.thread, z.kind)
}

// termTablesMissing handles term tables dropped out of band while the
// records table remains: they are created again and rebuilt from the
// records' terms column, which holds every document. The caller holds the
// migration lock and has migrated the collection.
func termTablesMissing(ctx context.Context, tx pgx.Tx, n *names) error {
	var ok bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
		n.expand("{terms}"), n.expand("{tstats}")).Scan(&ok); err != nil {
		return fmt.Errorf("look up term tables: %w", err)
	}
	if ok {
		return nil
	}
	slog.Warn("pgvector: term index tables are missing (dropped outside strata?); rebuilding them from the records", "table", n.expand("{table}"))
	for _, sql := range []string{"DROP TABLE IF EXISTS {terms}, {tstats}", termsSQL, sketchSQL, rebuildSQL} {
		if _, err := tx.Exec(ctx, n.expand(sql)); err != nil {
			return fmt.Errorf("rebuild term index: %w", err)
		}
	}
	return nil
}

// Pruning slack: upper bounds are inflated and thresholds deflated by this
// relative amount, far above float8 rounding, so that no document is
// pruned because a bound and a score were rounded differently.
const pruneSlack = 1e-9

// exhaustiveMax is the number of postings (the sum of the query terms'
// document frequencies) up to which a ranking scores every posting of the
// query's terms rather than pruning. Aggregating a posting costs about a
// microsecond (measured on the test server), a pruned ranking of a
// 50,000-document resource a few milliseconds (BenchmarkTermSearch): below
// this, pruning saves less than it costs. A variable for the tests, which
// force pruning.
var exhaustiveMax = 4000

// directMax is the number of postings up to which a ranking scores every
// posting in one pass (directSQL) rather than pruning. A variable for the
// tests and benchmarks.
var directMax = exhaustiveMax

// termsWorkMem is the work_mem of a SearchTerms transaction (SET LOCAL):
// the aggregation of a common term's postings (tens of thousands of rows
// of about 130 bytes) spills to disk under the default 4MB.
const termsWorkMem = "64MB"

// maxPrunedTerms bounds the terms of a pruned ranking, which spells out a
// bound per term (about 30 parameters each; PostgreSQL takes 65535). A
// query with more terms (a turn's has 3-8) is ranked exhaustively.
const maxPrunedTerms = 32

// qterm is a query term some corpus document holds.
type qterm struct {
	term      string
	w, wi, ub float64 // query weight, weight·IDF, upper bound of one document's contribution
	maxtf     float64 // bound of the term's weight in a document (0: unknown)
	df        int
}

// SearchTerms ranks the corpus by BM25 in the engine (driver.TermSearcher).
//
// It runs in a read-only REPEATABLE READ transaction, so that statistics
// and postings come from one snapshot, in two statements and two round
// trips (see snapshot). The first reads the corpus' statistics: a few
// index rows (per kind, the document count and total length, and each
// query term's frequency and bounds); the IDFs are computed here with
// driver.IDF. The second ranks, in one of three ways:
//
//   - with Filter.IDs, the postings of those records for the query terms,
//     by primary key (idsSQL);
//   - when the query's terms hold few postings altogether (exhaustiveMax),
//     or when even all of them together would not seed the pruning (each
//     of them common, or a single term), every one of them, from the
//     postings index: few, in one pass that scores each document exactly
//     (directSQL); many, in two, a sum per document to pick the
//     candidates, then their exact scores (exhaustiveSQL); a single term
//     needs no aggregation;
//   - otherwise with max-score pruning (prunedSQL): a threshold from the
//     exact scores of the likely best documents of the rarest terms; only
//     the postings of the terms whose bounds could still lift a document
//     to it are read, each checked against the document's sketch (its
//     Bloom filter and weight bounds say what the other query terms can
//     add) before any aggregation; the few documents left are scored
//     exactly, best bounds first. The cost follows the postings of the
//     query's rare terms, not those of its common ones nor the corpus.
//
// In every case the scores returned are computed per document from all
// its query terms' postings, added in byte order of the terms as
// driver.BM25 adds them, so equal documents tie exactly and are ordered by
// id, also at K. The filter's narrowing fields (IDs, Metadata, time
// bounds) are checked on the records table, for the documents that get
// that far only. The statements are planned once per connection and shape
// (plan_cache_mode = force_generic_plan, SET LOCAL): their work is in
// arrays, whose values no plan depends on, and planning one costs more
// than running it.
func (c *collection) SearchTerms(ctx context.Context, q driver.TermQuery) (driver.TermResult, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	terms := make([]string, 0, len(q.Terms))
	for t := range q.Terms {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	f := q.Filter

	var sb sqlBuilder
	cond := "layer = " + sb.arg(f.Layer) + " AND term = ANY(" + sb.arg(append([]string{""}, terms...)) + "::text[]) AND thread = " + sb.arg(f.Thread)
	if f.Resource != "" {
		cond += " AND resource = " + sb.arg(f.Resource)
	}
	if f.Kind != "" {
		cond += " AND kind = " + sb.arg(f.Kind)
	}
	// Rows of the empty thread roll a resource up; a thread's own rows
	// count that thread. One row back, whatever the corpus holds.
	statsSQL := c.n.expand(`WITH s AS (
	SELECT term, sum(n)::bigint AS n, sum(len)::float8 AS len, max(maxtf) AS maxtf, min(mindl) AS mindl
	FROM {tstats} WHERE ` + cond + ` GROUP BY term)
SELECT (SELECT array_agg(term) FROM s), (SELECT array_agg(n) FROM s), (SELECT array_agg(len) FROM s),
	(SELECT array_agg(maxtf) FROM s), (SELECT array_agg(mindl) FROM s),
	set_config('plan_cache_mode', 'force_generic_plan', true)||set_config('work_mem', '` + termsWorkMem + `', true)`)

	var res driver.TermResult
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		tx := &snapshot{conn: conn}
		return tx.end(ctx, func() error {
			var (
				sTerms []string
				sN     []int64
				sLen   []float64
				sMaxTF []*float32
				sMinDL []*float64
			)
			var setting string
			if err := tx.first(ctx, statsSQL, sb.args, &sTerms, &sN, &sLen, &sMaxTF, &sMinDL, &setting); err != nil {
				return err
			}
			res = driver.TermResult{DocFreq: make(map[string]int, len(terms))}
			for _, t := range terms {
				res.DocFreq[t] = 0
			}
			maxtf, mindl := map[string]float64{}, map[string]float64{}
			var total float64
			for i, t := range sTerms {
				if t == "" {
					res.Docs, total = int(sN[i]), sLen[i]
					continue
				}
				res.DocFreq[t] = int(sN[i])
				if sMaxTF[i] != nil && sMinDL[i] != nil {
					maxtf[t], mindl[t] = float64(*sMaxTF[i]), *sMinDL[i]
				}
			}
			if res.Docs <= 0 {
				res.Docs = 0
				return nil
			}
			res.AvgLen = total / float64(res.Docs)
			k1, b, avg := q.K1, q.B, res.AvgLen
			var qs []qterm // the terms some document holds, in byte order
			sumDF := 0
			for _, t := range terms {
				df := res.DocFreq[t]
				if df <= 0 {
					continue
				}
				x := qterm{term: t, w: q.Terms[t], df: df}
				x.wi = x.w * driver.IDF(res.Docs, df)
				sat := k1 + 1 // tf·(k1+1)/(tf + k1·norm) < k1+1 always
				if tf := maxtf[t]; tf > 0 {
					x.maxtf = tf
					sat = tf * (k1 + 1) / (tf + k1*(1-b+b*max(mindl[t], 0)/avg))
				}
				x.ub = x.wi * sat * (1 + pruneSlack)
				qs = append(qs, x)
				sumDF += df
			}
			if len(qs) == 0 {
				return nil
			}
			r := &termRanker{c: c, q: &q, qs: qs, avg: avg}
			var sql string
			var args []any
			switch {
			case len(f.IDs) > 0:
				sql, args = r.idsSQL()
			case sumDF <= directMax:
				sql, args = r.directSQL()
			case sumDF <= exhaustiveMax || len(qs) > maxPrunedTerms:
				sql, args = r.exhaustiveSQL()
			default:
				// Terms by bound, descending; the seed is the prefix
				// that holds K documents or more.
				byUB := slices.Clone(qs)
				slices.SortFunc(byUB, func(x, y qterm) int {
					if x.ub != y.ub {
						if x.ub > y.ub {
							return -1
						}
						return 1
					}
					return strings.Compare(x.term, y.term)
				})
				seed, cum := 0, 0
				for seed < len(byUB) && cum < q.K {
					cum += byUB[seed].df
					seed++
				}
				if seed == len(byUB) {
					// The seed would be every term (common terms
					// only, or one): pruning reads nothing less, and
					// costs a second pass. Score them all once.
					sql, args = r.exhaustiveSQL()
				} else {
					sql, args = r.prunedSQL(byUB, seed)
				}
			}
			return tx.last(ctx, sql, args, func(rows pgx.Rows) (err error) {
				res.Matches, err = scanRecords(rows, false, q.WithVectors, true)
				return err
			})
		}())
	})
	if err != nil {
		return driver.TermResult{}, c.fail(ctx, "search terms", err)
	}
	return res, nil
}

// snapshot is the read-only REPEATABLE READ transaction of a SearchTerms,
// in two round trips instead of four: BEGIN is sent with the first
// statement (the statistics), COMMIT with the last (the ranking), each
// pair in one pipelined batch.
type snapshot struct {
	conn *pgx.Conn
	open bool // BEGIN sent, COMMIT not yet
}

// first begins the transaction and runs sql, which returns one row, into
// dest.
func (s *snapshot) first(ctx context.Context, sql string, args []any, dest ...any) error {
	var batch pgx.Batch
	batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	batch.Queue(sql, args...)
	s.open = true
	br := s.conn.SendBatch(ctx, &batch)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(dest...)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// last runs sql, whose rows scan reads (and closes), and commits.
func (s *snapshot) last(ctx context.Context, sql string, args []any, scan func(pgx.Rows) error) error {
	var batch pgx.Batch
	batch.Queue(sql, args...)
	batch.Queue("COMMIT")
	s.open = false
	br := s.conn.SendBatch(ctx, &batch)
	rows, err := br.Query()
	if err == nil {
		err = scan(rows)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// end closes the transaction after the statements ran with outcome err:
// a rollback after an error (a connection left in a transaction is not
// returned to the pool but closed, should that fail too), a commit if
// last did not run.
func (s *snapshot) end(ctx context.Context, err error) error {
	if err != nil {
		if !s.conn.IsClosed() && s.conn.PgConn().TxStatus() != 'I' {
			_, _ = s.conn.Exec(ctx, "ROLLBACK")
		}
		return err
	}
	if s.open {
		s.open = false
		_, err = s.conn.Exec(ctx, "COMMIT")
	}
	return err
}

// termRanker builds the ranking statements of one SearchTerms.
type termRanker struct {
	c   *collection
	q   *driver.TermQuery
	qs  []qterm // in byte order of the terms
	avg float64
	b   sqlBuilder
	// placeholders of the common parameters, set by begin
	pT, pK1, pB, pAvg, pK string
}

// begin starts a statement: the query terms (in byte order, numbered
// from 1: column i) as CTE q, the BM25 parameters, K.
func (r *termRanker) begin() string {
	r.b = sqlBuilder{}
	terms, wis := make([]string, len(r.qs)), make([]float64, len(r.qs))
	for i, x := range r.qs {
		terms[i], wis[i] = x.term, x.wi
	}
	r.pT = r.b.arg(terms)
	pW := r.b.arg(wis)
	r.pK1, r.pB, r.pAvg = r.b.arg(r.q.K1)+"::float8", r.b.arg(r.q.B)+"::float8", r.b.arg(r.avg)+"::float8"
	r.pK = r.b.arg(r.q.K) + "::int"
	return `WITH q AS MATERIALIZED (
	SELECT t.term COLLATE "C" AS term, t.wi, t.i::int AS i FROM unnest(` + r.pT + `::text[], ` + pW + `::float8[]) WITH ORDINALITY AS t(term, wi, i)
),
`
}

// contrib is one posting's contribution, as driver.BM25 computes it:
// w·IDF · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)).
func (r *termRanker) contrib() string {
	return "q.wi * p.tf::float8 * (" + r.pK1 + " + 1) / (p.tf::float8 + " + r.pK1 + " * (1 - " + r.pB + " + " + r.pB + " * p.dl / " + r.pAvg + "))"
}

// corpus is the condition on postings p of the filter's corpus fields.
func (r *termRanker) corpus() string {
	f := &r.q.Filter
	s := "p.layer = " + r.b.arg(f.Layer)
	if f.Resource != "" {
		s += " AND p.resource = " + r.b.arg(f.Resource)
	}
	if f.Thread != "" {
		s += " AND p.thread = " + r.b.arg(f.Thread)
	}
	if f.Kind != "" {
		s += " AND p.kind = " + r.b.arg(f.Kind)
	}
	return s
}

// eligible is " AND EXISTS (...)" checking the filter's narrowing fields
// on the record id, "" when the filter has none. The filter renders
// unqualified columns: inside the EXISTS they name the records table, the
// innermost one.
func (r *termRanker) eligible(id string, withIDs bool) string {
	f := &r.q.Filter
	narrow := driver.Filter{Metadata: f.Metadata, CreatedFrom: f.CreatedFrom, CreatedBefore: f.CreatedBefore, ValidAt: f.ValidAt}
	if withIDs {
		narrow.IDs = f.IDs
	}
	w := r.b.filter(&narrow)
	if w == "" {
		return ""
	}
	return " AND EXISTS (SELECT 1 FROM {table} WHERE {table}.id = " + id + " AND " + strings.TrimPrefix(w, " WHERE ") + ")"
}

// exactOf scores the documents of CTE cte (column id) exactly, each from
// all its query terms' postings (primary key lookups, in key order: by id,
// then term), added in byte order of the terms as driver.BM25 adds them.
func (r *termRanker) exactOf(cte string) string {
	return `SELECT p.id, sum(` + r.contrib() + ` ORDER BY p.term) AS score
	FROM {terms} p JOIN q ON q.term = p.term
	WHERE p.id = ANY(ARRAY(SELECT id FROM ` + cte + `)) AND p.term = ANY(` + r.pT + `::text[])
	GROUP BY p.id`
}

// finish scores the documents of CTE "pick" exactly and returns the top K
// joined to their records.
func (r *termRanker) finish(sql string) (string, []any) {
	return r.finishExact(sql + `,
exact AS (
	` + r.exactOf("pick") + `
)`)
}

// finishExact returns the top K of CTE "exact" (id, score) joined to
// their records.
func (r *termRanker) finishExact(sql string) (string, []any) {
	vecCol := ""
	if r.q.WithVectors {
		vecCol = ", r.embedding"
	}
	sql += `,
top AS (SELECT id, score FROM exact WHERE score > 0 ORDER BY score DESC, id LIMIT ` + r.pK + `)
SELECT ` + prefixed("r.", matchCols) + vecCol + `, top.score FROM top JOIN {table} r ON r.id = top.id ORDER BY top.score DESC, top.id`
	return r.c.n.expand(sql), r.b.args
}

// idsSQL ranks the records Filter.IDs names: their postings of the query
// terms by primary key (OFFSET 0 keeps the corpus conditions out of the
// scan, where they would let the planner pick the postings index and read
// every posting of the terms), kept if in the corpus (every posting of a
// record has its corpus fields) and eligible, scored in the same pass as
// directSQL scores.
func (r *termRanker) idsSQL() (string, []any) {
	sql := r.begin() + `exact AS (
	SELECT x.id, ` + r.termSum() + ` AS score
	FROM (
		SELECT p.id, q.i, ` + r.contrib() + ` AS c
		FROM (
			SELECT id, term, tf, dl, layer, kind, resource, thread FROM {terms}
			WHERE id = ANY(` + r.b.arg(r.q.Filter.IDs) + `::text[]) AND term = ANY(` + r.pT + `::text[])
			OFFSET 0) p
		JOIN q ON q.term = p.term
		WHERE ` + r.corpus() + r.eligible("p.id", false) + `
	) x
	GROUP BY x.id
)`
	return r.finishExact(sql)
}

// directSQL scores every posting of the query's terms in the corpus, in
// one pass: each document's exact score straight from the postings index.
// The score is the sum of one column per query term (the contribution of
// the document's posting of the term, 0 without one), added in byte order
// of the terms: the float8 additions driver.BM25 makes, in its order
// (adding 0 changes nothing), without the per-document sort an ordered
// aggregate (sum(... ORDER BY term)) costs. For the few postings of
// exhaustiveMax this takes a fraction of exhaustiveSQL's two passes, which
// hash the postings, materialise the sums, sort them for the K-th and
// read the candidates' postings again; one statement text per number of
// terms.
func (r *termRanker) directSQL() (string, []any) {
	if len(r.qs) == 1 {
		return r.exhaustiveSQL()
	}
	sql := r.begin() + `exact AS (
	SELECT x.id, ` + r.termSum() + ` AS score
	FROM (
		SELECT p.id, q.i, ` + r.contrib() + ` AS c
		FROM q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + r.eligible("p.id", false) + `
	) x
	GROUP BY x.id
)`
	return r.finishExact(sql)
}

// termSum is a document's score from rows x (i, c) grouped by document:
// the contributions c of its postings, one column per query term i, added
// in the terms' byte order (see directSQL).
func (r *termRanker) termSum() string {
	cols := make([]string, len(r.qs))
	for i := range r.qs {
		cols[i] = "coalesce(sum(x.c) FILTER (WHERE x.i = " + strconv.Itoa(i+1) + "), 0)"
	}
	return strings.Join(cols, "\n\t\t+ ")
}

// exhaustiveSQL scores every posting of the query's terms in the corpus:
// an unordered sum per document picks the candidates (those within
// rounding of the K-th best, so that ties at K are all kept), which are
// then scored exactly.
func (r *termRanker) exhaustiveSQL() (string, []any) {
	if len(r.qs) == 1 {
		// One term: a document has one posting of it, whose contribution
		// is its exact score (sum(x ORDER BY term) of one x is x): rank
		// them directly, with no aggregation and no second pass.
		sql := r.begin() + `exact AS (
	SELECT p.id, ` + r.contrib() + ` AS score
	FROM q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + r.eligible("p.id", false) + `
)`
		return r.finishExact(sql)
	}
	sql := r.begin() + `pre AS (
	SELECT p.id, sum(` + r.contrib() + `) AS s
	FROM q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + `
	GROUP BY p.id
),
elig AS (SELECT pre.id, pre.s FROM pre WHERE true` + r.eligible("pre.id", false) + `),
kth AS (SELECT coalesce((SELECT s FROM elig ORDER BY s DESC LIMIT 1 OFFSET ` + r.pK + ` - 1), 0) * (1 - ` + r.b.arg(pruneSlack) + `::float8) AS t),
pick AS (SELECT elig.id FROM elig, kth WHERE elig.s >= kth.t)`
	return r.finish(sql)
}

// sketchTFs is, for term x, the weight bound of each sketch code c (index
// c): 0 for an empty bucket, the least of the corpus' maxtf and the code's
// bound otherwise; for code 255 (no bound) the corpus' maxtf, or +Inf if
// unknown (the saturation then bounds at k1+1).
func sketchTFs(x qterm) []float64 {
	maxtf := x.maxtf
	if maxtf <= 0 {
		maxtf = math.Inf(1)
	}
	t := make([]float64, 256)
	for c := 1; c < 255; c++ {
		t[c] = min(maxtf, sketchValue(c))
	}
	t[255] = maxtf
	return t
}

// prunedSQL ranks with max-score pruning (see SearchTerms), in one
// statement. byUB are the terms by bound, descending; the first seed of
// them hold K documents or more.
//
//   - seed: the seed terms' postings per document (partial score), the
//     eligible documents only;
//   - best: the 2K seed documents with the highest bounds (partial score
//     plus the other terms' sketch bounds), scored exactly: bexact;
//   - th: the threshold, the greater of the K-th best partial score of the
//     seed and the K-th best exact score of best, both lower bounds of the
//     K-th best score;
//   - m: how many terms candidates are read from: the seed, or more, until
//     the bounds of the remaining terms sum below the threshold, so that a
//     document holding none of the first m.n terms cannot reach it;
//   - cand: the documents of those terms' postings, partial scores; a
//     posting whose own contribution plus the other terms' sketch bounds
//     (the Bloom filter rules most of them out) stays below the threshold
//     is dropped before the aggregation: its document cannot reach it;
//   - th2: the threshold raised to the K-th best partial score of cand if
//     higher;
//   - ub: the candidates not in bexact, eligible, whose partial score plus
//     the corpus-wide bounds of the remaining terms reaches it (cheap),
//     with their bound from their own sketches and lengths;
//   - pickA: the K with the highest bounds that reach the threshold,
//     scored exactly (exactA, with bexact); th3: the threshold raised to
//     the K-th best of those scores;
//   - pickB: the other candidates whose bound reaches th3, scored exactly;
//     the top K of all the exact scores.
func (r *termRanker) prunedSQL(byUB []qterm, seed int) (string, []any) {
	sql := r.begin()
	n := len(byUB)
	terms, wis, sfx := make([]string, n), make([]float64, n), make([]float64, n)
	tfs := make([]float64, 0, 256*n)
	var sum float64
	for i := n - 1; i >= 0; i-- {
		sum += byUB[i].ub
		terms[i], wis[i], sfx[i] = byUB[i].term, byUB[i].wi, sum
	}
	for _, x := range byUB {
		tfs = append(tfs, sketchTFs(x)...)
	}
	pS := r.b.arg(seed) + "::int"
	pTFs := r.b.arg(tfs) + "::float8[]"
	// Partial scores and bounds only prune: they use a cheaper form of the
	// same formula, w·IDF·(k1+1) · tf / (tf + A + B·dl) with A = k1·(1-b),
	// B = k1·b/avgdl (equal up to rounding, covered by pruneSlack); the
	// scores returned are computed as driver.BM25 does (contrib).
	k1, b := r.q.K1, r.q.B
	pA, pB := r.b.arg(k1*(1-b))+"::float8", r.b.arg(k1*b/r.avg)+"::float8"
	wks := make([]float64, n)
	for i := range byUB {
		wks[i] = byUB[i].wi * (k1 + 1)
	}
	fast := "q.wk * p.tf / (p.tf + " + pA + " + " + pB + " * p.dl)"
	// Bounds are compared with the threshold less an absolute slack too:
	// the bounds' form wk - wk·norm/(tf+norm) may round a few ulps of wk
	// below the true value, more than pruneSlack of a small threshold.
	var sumWK float64
	for _, w := range wks {
		sumWK += w
	}
	pEps := r.b.arg(sumWK*1e-12) + "::float8"
	// bound(alias, j): what term j (1-based, byUB order) can give the
	// document of alias (columns dl, sketch): w·IDF, inflated, times the
	// saturation of its sketch's weight bound at its length. A posting
	// written before sketches has none: code 255, the corpus' bound.
	bound := func(alias string, j int) string {
		x := byUB[j-1]
		// The Bloom filter first: a term it rules out gives nothing. A
		// posting without sketch (NULL) admits every term.
		bb, mask := bloomByte(x.term)
		present := "coalesce(get_byte(" + alias + ".sketch, " + r.b.arg(bb) + "::int) & " + r.b.arg(int(mask)) + "::int = " + r.b.arg(int(mask)) + "::int, true)"
		code := "coalesce(get_byte(" + alias + ".sketch, " + r.b.arg(sketchBucket(x.term)) + "::int), 255)"
		tf := "(" + pTFs + ")[" + strconv.Itoa((j-1)*256+1) + " + " + code + "]"
		wk := r.b.arg(x.wi*(k1+1)*(1+pruneSlack)) + "::float8"
		norm := "(" + pA + " + " + pB + " * " + alias + ".dl)"
		// wk·tf/(tf+norm) written wk - wk·norm/(tf+norm), which reads tf
		// once (SQL has no common subexpressions); equal up to rounding,
		// far below pruneSlack.
		sat := wk + " - " + wk + " * " + norm + " / (" + tf + " + " + norm + ")"
		if x.maxtf <= 0 {
			// tf may be +Inf (no bound): the saturation bound k1+1.
			sat = "least(" + r.b.arg(x.ub) + "::float8, " + sat + ")"
		}
		return "(CASE WHEN " + present + " THEN " + sat + " ELSE 0 END)"
	}
	// One statement text per number of terms (the seed and the split
	// are parameters): prepared and planned once per connection.
	var seedBounds, pickBounds, rowBounds []string
	for j := 1; j <= n; j++ {
		seedBounds = append(seedBounds, "(CASE WHEN "+pS+" < "+strconv.Itoa(j)+" THEN "+bound("seed", j)+" ELSE 0 END)")
		pickBounds = append(pickBounds, "(CASE WHEN m.n < "+strconv.Itoa(j)+" THEN "+bound("cand", j)+" ELSE 0 END)")
		rowBounds = append(rowBounds, "(CASE WHEN q.i = "+strconv.Itoa(j)+" THEN 0 ELSE "+bound("p", j)+" END)")
	}
	partial := func(cond string) string {
		return `SELECT p.id, p.dl, p.sketch, sum(` + fast + `) AS part
		FROM qb q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + `
		WHERE ` + cond + `
		GROUP BY p.id, p.dl, p.sketch`
	}
	// A seed of one term (the usual case: the rarest term holds K
	// documents) has one posting per document: its partial scores need
	// no aggregation, which costs more than reading the postings.
	var seedPart string
	if seed > 1 {
		seedPart = partial("q.i <= " + pS)
	} else {
		seedPart = `SELECT p.id, p.dl, p.sketch, ` + fast + ` AS part
		FROM qb q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + `
		WHERE q.i = 1`
	}
	sql += `qb AS MATERIALIZED (
	SELECT t.term COLLATE "C" AS term, t.wi, t.wk, t.sfx, t.i::int AS i
	FROM unnest(` + r.b.arg(terms) + `::text[], ` + r.b.arg(wis) + `::float8[], ` + r.b.arg(wks) + `::float8[], ` + r.b.arg(sfx) + `::float8[])
		WITH ORDINALITY AS t(term, wi, wk, sfx, i)
),
seed AS MATERIALIZED (
	SELECT s.* FROM (
		` + seedPart + `
	) s WHERE true` + r.eligible("s.id", false) + `
),
best AS (
	SELECT seed.id FROM seed
	ORDER BY seed.part + ` + strings.Join(seedBounds, "\n\t\t+ ") + ` DESC
	LIMIT 2 * ` + r.pK + `
),
bexact AS MATERIALIZED (
	` + r.exactOf("best") + `
),
th AS MATERIALIZED (
	SELECT greatest(
		coalesce((SELECT part FROM seed ORDER BY part DESC LIMIT 1 OFFSET ` + r.pK + ` - 1), 0),
		coalesce((SELECT score FROM bexact ORDER BY score DESC LIMIT 1 OFFSET ` + r.pK + ` - 1), 0)
	) * (1 - ` + r.b.arg(pruneSlack) + `::float8) AS t
),
m AS MATERIALIZED (
	SELECT n, coalesce((SELECT qb.sfx FROM qb WHERE qb.i = n + 1), 0) AS rest FROM (
		SELECT greatest(` + pS + `, (SELECT count(*) FROM qb WHERE qb.sfx >= (SELECT t FROM th)))::int AS n) x
),
cand AS MATERIALIZED (
	` + partial("q.i <= (SELECT n FROM m)\n\t\tAND "+fast+"\n\t\t\t+ "+strings.Join(rowBounds, "\n\t\t\t+ ")+" >= (SELECT t FROM th) - "+pEps) + `
),
th2 AS MATERIALIZED (
	SELECT greatest((SELECT t FROM th),
		coalesce((SELECT part FROM cand WHERE true` + r.eligible("cand.id", false) + ` ORDER BY part DESC LIMIT 1 OFFSET ` + r.pK + ` - 1), 0)
			* (1 - ` + r.b.arg(pruneSlack) + `::float8)) AS t
),
ub AS MATERIALIZED (
	SELECT cand.id, cand.part + ` + strings.Join(pickBounds, "\n\t\t\t+ ") + ` AS ub
	FROM cand, th2 th, m
	WHERE cand.part + m.rest >= th.t
		AND cand.id NOT IN (SELECT id FROM bexact)` + r.eligible("cand.id", false) + `
),
pickA AS MATERIALIZED (
	SELECT ub.id FROM ub WHERE ub.ub >= (SELECT t FROM th2) - ` + pEps + ` ORDER BY ub.ub DESC LIMIT ` + r.pK + `
),
exactA AS MATERIALIZED (
	` + r.exactOf("pickA") + `
	UNION ALL
	SELECT id, score FROM bexact
),
th3 AS MATERIALIZED (
	SELECT greatest((SELECT t FROM th2),
		coalesce((SELECT score FROM exactA ORDER BY score DESC LIMIT 1 OFFSET ` + r.pK + ` - 1), 0) * (1 - ` + r.b.arg(pruneSlack) + `::float8)) AS t
),
pickB AS (
	SELECT ub.id FROM ub WHERE ub.ub >= (SELECT t FROM th3) - ` + pEps + ` AND ub.id NOT IN (SELECT id FROM pickA)
),
exact AS (
	` + r.exactOf("pickB") + `
	UNION ALL
	SELECT id, score FROM exactA
)`
	return r.finishExact(sql)
}

// prefixed qualifies a column list ("a, b") with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = alias + parts[i]
	}
	return strings.Join(parts, ", ")
}

var _ driver.TermSearcher = (*collection)(nil)
