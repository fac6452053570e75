package pgvector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
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
const reconcileSQL = `WITH
cur AS (
	SELECT r.id, t.key COLLATE "C" AS term, t.value::real AS tf,
		r.layer COLLATE "C" AS layer, r.kind COLLATE "C" AS kind,
		r.resource COLLATE "C" AS resource, r.thread COLLATE "C" AS thread
	FROM {table} r CROSS JOIN LATERAL jsonb_each(r.terms) t
	WHERE r.id = ANY($1::text[]) AND r.terms IS NOT NULL
),
np AS (
	SELECT id, term, tf, sum(tf::float8) OVER (PARTITION BY id ORDER BY term ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS dl,
		layer, kind, resource, thread
	FROM cur
),
op AS (
	SELECT id, term, tf, dl, layer, kind, resource, thread FROM {terms} WHERE id = ANY($1::text[])
),
ch AS (
	SELECT coalesce(n.id, o.id) AS id, coalesce(n.term, o.term) AS term, n.id IS NOT NULL AS isnew, o.id IS NOT NULL AS isold,
		n.tf AS ntf, n.dl AS ndl, n.layer AS nlayer, n.kind AS nkind, n.resource AS nresource, n.thread AS nthread,
		o.layer AS olayer, o.kind AS okind, o.resource AS oresource, o.thread AS othread
	FROM np n FULL JOIN op o ON o.id = n.id AND o.term = n.term
	WHERE n.id IS NULL OR o.id IS NULL
		OR (n.tf, n.dl, n.layer, n.kind, n.resource, n.thread) IS DISTINCT FROM (o.tf, o.dl, o.layer, o.kind, o.resource, o.thread)
),
del AS (
	DELETE FROM {terms} p USING ch WHERE NOT ch.isnew AND p.id = ch.id AND p.term = ch.term
),
ins AS (
	INSERT INTO {terms} AS p (id, term, tf, dl, layer, kind, resource, thread)
	SELECT id, term, ntf, ndl, nlayer, nkind, nresource, nthread FROM ch WHERE isnew
	ORDER BY id, term
	ON CONFLICT (id, term) DO UPDATE SET tf = EXCLUDED.tf, dl = EXCLUDED.dl, layer = EXCLUDED.layer,
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
	SELECT nlayer, nkind, nresource, nthread, term, 1, 0, ntf, ndl FROM ch WHERE isnew
),
agg AS (
	SELECT d.layer, d.term, d.resource, v.thread, d.kind, sum(d.dn) AS dn, sum(d.dlen) AS dlen, max(d.tf) AS maxtf, min(d.dl) AS mindl
	FROM delta d CROSS JOIN LATERAL (SELECT ''::text COLLATE "C" UNION ALL SELECT d.thread WHERE d.thread <> '') v(thread)
	GROUP BY d.layer, d.term, d.resource, v.thread, d.kind
	HAVING sum(d.dn) <> 0 OR sum(d.dlen) <> 0 OR count(d.tf) > 0
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

// sweepSQL removes statistics rows that a write left at zero. It runs after
// the write committed, on its own: a row a concurrent writer raised again
// meanwhile is kept (n <> 0), and a writer waiting to raise a row deleted
// here inserts it afresh (INSERT ... ON CONFLICT retries). Rows at zero
// are harmless to searches (they add nothing), so a sweep that fails only
// leaves garbage behind.
const sweepSQL = `DELETE FROM {tstats} WHERE n = 0 AND (layer, term, resource, thread, kind) IN
	(SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]))`

// rebuildSQL fills empty term tables from the records table: postings from
// every record's terms, then the statistics from the postings.
const rebuildSQL = `INSERT INTO {terms} (id, term, tf, dl, layer, kind, resource, thread)
SELECT id, term, tf, sum(tf::float8) OVER (PARTITION BY id ORDER BY term ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
	layer, kind, resource, thread
FROM (SELECT r.id, t.key COLLATE "C" AS term, t.value::real AS tf, r.layer, r.kind, r.resource, r.thread
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
	for _, sql := range []string{"DROP TABLE IF EXISTS {terms}, {tstats}", termsSQL, rebuildSQL} {
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
// query's terms rather than pruning. Scanning a posting from the index
// costs a fraction of a microsecond, looking up a document's postings a
// few: below this, pruning saves less than it costs (BenchmarkTermSearch).
var exhaustiveMax = 12000

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
// and postings come from one snapshot. The first statement reads the
// statistics of the corpus: a few index rows (per kind, the corpus'
// document count and total length, and each query term's frequency and
// bounds); IDFs are computed here, with driver.IDF. The ranking is then
// one of:
//
//   - with Filter.IDs, the postings of those records for the query terms
//     (primary key lookups);
//   - when the query's terms are held by few postings altogether
//     (exhaustiveMax), every one of them, from the postings index;
//   - otherwise max-score pruning. Each term has an upper bound of what it
//     gives one document (from the statistics' maxtf and mindl). The
//     postings of the terms with the highest bounds, enough of them to
//     hold K documents, give K candidates whose exact scores bound the
//     K-th best score from below (threshold). The terms whose bounds sum
//     below the threshold (the common ones) cannot alone put a document
//     in the top K: candidates are the documents that hold one of the
//     others, found from their postings only, and a candidate whose
//     partial score plus the bounds of the common terms (with its own
//     length) stays below the threshold is dropped. The rest are looked up
//     by primary key. The cost follows the postings of the query's rare
//     terms, not those of its common ones nor the corpus' size.
//
// In every case the scores returned are computed per document from all
// its query terms, added in byte order of the terms (as driver.BM25 adds
// them), so equal documents tie exactly and are ordered by id, also at K.
// The filter's narrowing fields (IDs, Metadata, time bounds) are checked
// on the records table only for documents that get that far.
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
	(SELECT array_agg(maxtf) FROM s), (SELECT array_agg(mindl) FROM s)`)

	var res driver.TermResult
	err := c.withConnRetry(ctx, true, func(conn *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var (
				sTerms []string
				sN     []int64
				sLen   []float64
				sMaxTF []*float32
				sMinDL []*float64
			)
			if err := tx.QueryRow(ctx, statsSQL, sb.args...).Scan(&sTerms, &sN, &sLen, &sMaxTF, &sMinDL); err != nil {
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
			case sumDF <= exhaustiveMax:
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
				theta := 0.0
				if cum >= q.K && seed < len(byUB) {
					tsql, targs := r.thresholdSQL(byUB[:seed])
					var th *float64
					if err := tx.QueryRow(ctx, tsql, targs...).Scan(&th); err != nil {
						return err
					}
					if th != nil {
						theta = *th * (1 - pruneSlack)
					}
				}
				// Essential terms: the prefix whose suffix of bounds
				// reaches the threshold; the tail (common terms) cannot
				// alone.
				ess, rest := len(byUB), 0.0
				for ess > 0 && rest+byUB[ess-1].ub < theta {
					rest += byUB[ess-1].ub
					ess--
				}
				if ess == len(byUB) {
					sql, args = r.exhaustiveSQL()
				} else {
					sql, args = r.maxScoreSQL(byUB[:ess], byUB[ess:], theta)
				}
			}
			if debugSQL != nil {
				debugSQL(sql, args)
			}
			rows, err := tx.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			res.Matches, err = scanRecords(rows, false, q.WithVectors, true)
			return err
		})
	})
	if err != nil {
		return driver.TermResult{}, c.fail(ctx, "search terms", err)
	}
	return res, nil
}

var debugSQL func(string, []any)

// termRanker builds the ranking statements of one SearchTerms.
type termRanker struct {
	c   *collection
	q   *driver.TermQuery
	qs  []qterm // in byte order of the terms
	avg float64
	b   sqlBuilder
	// placeholders of the common parameters, set by begin
	pK1, pB, pAvg, pK string
}

// begin starts a statement: the query terms (in byte order) as CTE q, the
// BM25 parameters, K.
func (r *termRanker) begin() string {
	r.b = sqlBuilder{}
	terms, wis := make([]string, len(r.qs)), make([]float64, len(r.qs))
	for i, x := range r.qs {
		terms[i], wis[i] = x.term, x.wi
	}
	pT, pW := r.b.arg(terms), r.b.arg(wis)
	r.pK1, r.pB, r.pAvg = r.b.arg(r.q.K1)+"::float8", r.b.arg(r.q.B)+"::float8", r.b.arg(r.avg)+"::float8"
	r.pK = r.b.arg(r.q.K) + "::int"
	return `WITH q AS MATERIALIZED (
	SELECT t.term COLLATE "C" AS term, t.wi FROM unnest(` + pT + `::text[], ` + pW + `::float8[]) AS t(term, wi)
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

// finish scores the documents of CTE "pick" (column id) exactly, each from
// all its query terms' postings added in byte order of the terms (primary
// key lookups), and returns the top K joined to their records.
func (r *termRanker) finish(sql string) (string, []any) {
	vecCol := ""
	if r.q.WithVectors {
		vecCol = ", r.embedding"
	}
	sql += `,
exact AS (
	SELECT p.id, sum(` + r.contrib() + ` ORDER BY q.term) AS score
	FROM {terms} p JOIN q ON q.term = p.term
	WHERE p.id = ANY(ARRAY(SELECT id FROM pick)) AND p.term = ANY(ARRAY(SELECT term FROM q))
	GROUP BY p.id
),
top AS (SELECT id, score FROM exact WHERE score > 0 ORDER BY score DESC, id LIMIT ` + r.pK + `)
SELECT ` + prefixed("r.", matchCols) + vecCol + `, top.score FROM top JOIN {table} r ON r.id = top.id ORDER BY top.score DESC, top.id`
	return r.c.n.expand(sql), r.b.args
}

// idsSQL ranks the records Filter.IDs names.
func (r *termRanker) idsSQL() (string, []any) {
	sql := r.begin() + `pick AS (
	SELECT DISTINCT p.id FROM {terms} p
	WHERE p.id = ANY(` + r.b.arg(r.q.Filter.IDs) + `::text[]) AND p.term = ANY(ARRAY(SELECT term FROM q)) AND ` + r.corpus() + r.eligible("p.id", false) + `
)`
	return r.finish(sql)
}

// exhaustiveSQL scores every posting of the query's terms in the corpus:
// an unordered sum per document picks the candidates (those within
// rounding of the K-th best, so that ties at K are all kept), which are
// then scored exactly.
func (r *termRanker) exhaustiveSQL() (string, []any) {
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

// thresholdSQL returns a lower bound of the K-th best score: the K best
// documents of the seed terms' postings by partial score, scored exactly;
// the least of their scores (NULL with fewer than K).
func (r *termRanker) thresholdSQL(seed []qterm) (string, []any) {
	sql := r.begin()
	seedTerms := make([]string, len(seed))
	for i, x := range seed {
		seedTerms[i] = x.term
	}
	sql += `seed AS (
	SELECT p.id, sum(` + r.contrib() + `) AS part
	FROM q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + `
	WHERE q.term = ANY(` + r.b.arg(seedTerms) + `::text[])
	GROUP BY p.id
),
best AS (SELECT seed.id FROM seed WHERE true` + r.eligible("seed.id", false) + ` ORDER BY seed.part DESC LIMIT ` + r.pK + `),
exact AS (
	SELECT p.id, sum(` + r.contrib() + `) AS score
	FROM {terms} p JOIN q ON q.term = p.term
	WHERE p.id = ANY(ARRAY(SELECT id FROM best)) AND p.term = ANY(ARRAY(SELECT term FROM q))
	GROUP BY p.id
)
SELECT CASE WHEN count(*) >= ` + r.pK + ` THEN min(score) END FROM exact`
	return r.c.n.expand(sql), r.b.args
}

// maxScoreSQL ranks with the essential terms ess and the common terms ne
// under threshold theta (see SearchTerms). A candidate's bound is its
// partial score over ess plus, for each common term, what the term could
// give a document of its length.
func (r *termRanker) maxScoreSQL(ess, ne []qterm, theta float64) (string, []any) {
	sql := r.begin()
	essTerms := make([]string, len(ess))
	for i, x := range ess {
		essTerms[i] = x.term
	}
	// The common terms' bounds, unrolled: wi·maxtf·(k1+1)/(maxtf + k1·(1-b+b·dl/avg)).
	var bound []string
	for _, x := range ne {
		if x.maxtf <= 0 {
			bound = append(bound, r.b.arg(x.ub)+"::float8")
			continue
		}
		wi, tf := r.b.arg(x.wi*(1+pruneSlack))+"::float8", r.b.arg(x.maxtf)+"::float8"
		bound = append(bound, wi+" * "+tf+" * ("+r.pK1+" + 1) / ("+tf+" + "+r.pK1+" * (1 - "+r.pB+" + "+r.pB+" * cand.dl / "+r.pAvg+"))")
	}
	if len(bound) == 0 {
		bound = []string{"0"}
	}
	sql += `cand AS (
	SELECT p.id, min(p.dl) AS dl, sum(` + r.contrib() + `) AS part
	FROM q JOIN {terms} p ON p.term = q.term AND ` + r.corpus() + `
	WHERE q.term = ANY(` + r.b.arg(essTerms) + `::text[])
	GROUP BY p.id
),
pick AS (
	SELECT cand.id FROM cand WHERE cand.part + ` + strings.Join(bound, " + ") + ` >= ` + r.b.arg(theta) + `::float8` + r.eligible("cand.id", false) + `
)`
	return r.finish(sql)
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
