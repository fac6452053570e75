package scalebench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/postgres"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/pgvector" // registers postgres://
)

// Backend names.
const (
	Embedded = "embedded" // embedded.Open: chromem records + filestore state
	PGVector = "pgvector" // vectorstore.Open(postgres://...) + storage/postgres state
)

// backend is an open store as a host holds it: what the layers take and
// what the runtime keeps its state in.
type backend struct {
	mem   *memory.Store
	state storage.Store
	close func() error
}

// pgURL is dsn with the collection parameters added.
func pgURL(dsn, name string, dim int) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%scollection=%s&dimension=%d", dsn, sep, name, dim)
}

// PGCollection names the pgvector collection of a layout and size.
func PGCollection(l Layout, size int) string { return fmt.Sprintf("scale_%s_%d", l, size) }

// openEmbedded opens the data directory dir the way a host does, with emb.
func openEmbedded(ctx context.Context, dir string, emb embed.Embedder) (*backend, error) {
	env, err := embedded.Open(ctx, dir, embedded.Options{Embedder: emb})
	if err != nil {
		return nil, err
	}
	return &backend{mem: env.Memory, state: env.State, close: env.Close}, nil
}

// openPG opens collection name of the database at dsn and the runtime's
// state store in the same database.
func openPG(ctx context.Context, dsn, name string, emb embed.Embedder) (*backend, error) {
	col, err := vectorstore.Open(ctx, pgURL(dsn, name, emb.Dimension()), nil)
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		col.Close()
		return nil, err
	}
	return &backend{mem: &memory.Store{Records: col, Embedder: emb}, state: st,
		close: func() error { return errors.Join(col.Close(), st.Close()) }}, nil
}

// openPool connects to dsn. A DSN that does not parse is reported without
// its text, which may hold a password.
func openPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("scalebench: cannot parse the PostgreSQL DSN")
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// dropPG drops collection name if it exists.
func dropPG(ctx context.Context, dsn, name string) error {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pgvector.DropCollection(ctx, pool, "", name); err != nil && !errors.Is(err, vectorstore.ErrNotFound) {
		return err
	}
	return nil
}

// PGStats describe how the pgvector collection of a case was filled.
type PGStats struct {
	Collection string  `json:"collection"`
	Records    int     `json:"records"`
	Seconds    float64 `json:"seconds"`
	// Copied is false when the collection already held the store.
	Copied bool `json:"copied"`
}

// PreparePG makes the pgvector collection of (l, size) hold the records
// of the cached embedded store under root: the records the layer wrote,
// copied with their vectors, ids, metadata and times in one Upsert call
// (the driver's bulk path: COPY, then one HNSW build), as `memctl
// migrate` moves a store. A collection already holding them is kept.
func PreparePG(ctx context.Context, root, dsn string, l Layout, size, dim int, logf func(string, ...any)) (PGStats, error) {
	if dim == 0 {
		dim = DefaultDimension
	}
	dir := CacheDir(root, l, size, dim)
	ls, ok := ReadStats(dir)
	if !ok {
		return PGStats{}, fmt.Errorf("scalebench: no complete store at %s", dir)
	}
	name := PGCollection(l, size)
	ps := PGStats{Collection: name}
	emb := hashing.New(dim)
	dst, err := openPG(ctx, dsn, name, emb)
	if err != nil {
		return ps, err
	}
	if err := deleteProbes(ctx, dst.mem.Records, ProbeResource(l)); err != nil {
		dst.close()
		return ps, err
	}
	n, err := dst.mem.Records.Count(ctx, vectorstore.Filter{Layer: LayerID})
	dst.close()
	if err != nil {
		return ps, err
	}
	if n == ls.Records {
		ps.Records = n
		return ps, nil
	}
	begin := time.Now()
	logf("  copying %d records of %s into pgvector collection %s (had %d)", ls.Records, dir, name, n)
	if err := dropPG(ctx, dsn, name); err != nil {
		return ps, err
	}
	src, err := openEmbedded(ctx, dir, emb)
	if err != nil {
		return ps, err
	}
	defer src.close()
	var recs []vectorstore.Record
	for r, err := range src.mem.Records.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: LayerID}, Limit: vectorstore.MaxListLimit, WithVectors: true}) {
		if err != nil {
			return ps, err
		}
		if isProbe(r.Scope.Thread) {
			continue
		}
		recs = append(recs, r)
	}
	dst, err = openPG(ctx, dsn, name, emb)
	if err != nil {
		return ps, err
	}
	defer dst.close()
	// One call: a long one (COPY and the HNSW build); without a deadline
	// the driver would bound it by its default per-call timeout.
	uctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if err := dst.mem.Records.Upsert(uctx, recs...); err != nil {
		return ps, err
	}
	// A table just filled by COPY has no visibility map yet, so index
	// reads go back to the table for every row (the term search reads
	// its postings about 10x slower until autovacuum comes by): measure
	// the steady state a user's table is in, not the minute after a bulk
	// load.
	if err := vacuumPG(uctx, dsn); err != nil {
		return ps, err
	}
	ps.Records, ps.Seconds, ps.Copied = len(recs), time.Since(begin).Seconds(), true
	return ps, nil
}

// vacuumPG runs VACUUM ANALYZE on the benchmark's database.
func vacuumPG(ctx context.Context, dsn string) error {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("scalebench: vacuum after the copy: %w", err)
	}
	return nil
}

// Probe threads: the measurements write only there (new threads of the
// probe resource, named afresh by each run, as a host starts a new
// conversation), and every probe thread's records are deleted before and
// after, so the loaded stores stay as loaded.
const probeMark = "-probe-"

func probeThread(res, run, what string) string { return res + probeMark + run + "-" + what }

func isProbe(thread string) bool { return strings.Contains(thread, probeMark) }

// deleteProbes deletes the records of every probe thread of res, this
// run's and any an interrupted run left.
func deleteProbes(ctx context.Context, col *vectorstore.Collection, res string) error {
	seen := map[string]bool{}
	for r, err := range col.All(ctx, vectorstore.ListOptions{Filter: vectorstore.Filter{Layer: LayerID, Resource: res}, Limit: vectorstore.MaxListLimit}) {
		if err != nil {
			return err
		}
		if isProbe(r.Scope.Thread) {
			seen[r.Scope.Thread] = true
		}
	}
	for t := range seen {
		if _, err := col.DeleteWhere(ctx, vectorstore.Filter{Layer: LayerID, Thread: t}); err != nil {
			return err
		}
	}
	return nil
}
