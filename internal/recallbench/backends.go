package recallbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	qc "github.com/qdrant/go-client/qdrant"

	"github.com/stratamem/strata/vectorstore"
	_ "github.com/stratamem/strata/vectorstore/chromem" // registers chromem://
	"github.com/stratamem/strata/vectorstore/pgvector"
	_ "github.com/stratamem/strata/vectorstore/qdrant" // registers qdrant://
)

// Backend names.
const (
	Chromem  = "chromem"
	PGVector = "pgvector"
	Qdrant   = "qdrant"
)

// AllBackends lists the backends in report order.
var AllBackends = []string{Chromem, PGVector, Qdrant}

// Settings describe a backend's search configuration as run, read back from
// the backend where it can tell.
type Settings struct {
	Backend string
	// Search is "exact (brute force)" or "HNSW".
	Search         string
	M              int // 0 when not applicable
	EfConstruction int
	// EfSearch is the query-time candidate list; "" when not applicable.
	EfSearch string
	Notes    string
}

// instance is one open collection of a backend plus what the runner needs
// around it.
type instance struct {
	coll *vectorstore.Collection
	// ready waits until the backend has indexed everything ingested (Qdrant
	// builds its HNSW graph after acknowledging writes); nil when writes
	// are searchable through the index as soon as they are acknowledged.
	ready func(ctx context.Context) error
	// settings reads the configuration back.
	settings func(ctx context.Context) (Settings, error)
	// drop closes the collection and deletes it with its data.
	drop func(ctx context.Context) error
	// withEfSearch opens a second handle on the same collection whose
	// queries use another HNSW candidate list; nil when the backend has no
	// such setting.
	withEfSearch func(ctx context.Context, ef int) (*vectorstore.Collection, error)
	// bulkLoad measures the alternative bulk path of the backend on a
	// separate collection: load without the ANN index, then build it. Nil
	// when the backend has none.
	bulkLoad func(ctx context.Context, recs []vectorstore.Record, batch int) (load, build time.Duration, err error)
	// scans reads the backend's cumulative counts of sequential and index
	// scans of the collection, to tell which plan its queries took; nil
	// when the backend has no planner.
	scans func(ctx context.Context) (seq, idx int64, err error)
	// variant opens an empty collection of the same backend configured
	// another way, to be ingested and queried like the default one; label
	// says how it differs. Nil when the backend has none.
	variant func(ctx context.Context) (inst *instance, label string, err error)
}

// opener opens a fresh, empty collection of the given name and dimension.
type opener func(ctx context.Context, name string, dim int) (*instance, error)

func (c *Config) opener(backend string) (opener, error) {
	switch backend {
	case Chromem:
		return c.openChromem, nil
	case PGVector:
		if c.PGDSN == "" {
			return nil, fmt.Errorf("%w: backend pgvector needs a PostgreSQL DSN (STRATA_TEST_PG_DSN)", ErrInvalidConfig)
		}
		return c.openPG, nil
	case Qdrant:
		if c.QdrantAddr == "" {
			return nil, fmt.Errorf("%w: backend qdrant needs an address (STRATA_QDRANT_ADDR)", ErrInvalidConfig)
		}
		return c.openQdrant, nil
	}
	return nil, fmt.Errorf("%w: unknown backend %q (known: %s)", ErrInvalidConfig, backend, strings.Join(AllBackends, ", "))
}

func (c *Config) openChromem(ctx context.Context, name string, dim int) (*instance, error) {
	inst, err := c.openChromemDistance(ctx, name, dim, vectorstore.Cosine)
	if err != nil {
		return nil, err
	}
	// The driver answers cosine queries through chromem-go's search and
	// scores dot-product collections itself in one pass (see its package
	// doc). On unit vectors both rank identically, so a dot collection
	// measures the driver's own scan on the same data.
	inst.variant = func(ctx context.Context) (*instance, string, error) {
		v, err := c.openChromemDistance(ctx, name+"_dot", dim, vectorstore.Dot)
		return v, "distance dot: the driver's own exact scan instead of chromem-go's", err
	}
	return inst, nil
}

func (c *Config) openChromemDistance(ctx context.Context, name string, dim int, dist vectorstore.Distance) (*instance, error) {
	dir, err := os.MkdirTemp(c.ScratchDir, "recallbench-chromem-")
	if err != nil {
		return nil, err
	}
	// The URL path is the ordinary way in: the same code path a user's
	// configuration takes.
	coll, err := vectorstore.Open(ctx, "chromem://"+dir+"?collection="+name, &vectorstore.Options{Dimension: dim, Distance: dist})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &instance{
		coll: coll,
		settings: func(context.Context) (Settings, error) {
			return Settings{Backend: Chromem, Search: "exact (brute force)",
				Notes: "chromem-go " + moduleVersion("github.com/philippgille/chromem-go") + ", embedded, write-ahead log with one fsync per Upsert call"}, nil
		},
		drop: func(context.Context) error {
			return errors.Join(coll.Close(), os.RemoveAll(dir))
		},
	}, nil
}

// moduleVersion is the version of a dependency built into this binary,
// "(unknown)" when the build carries no module information.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown)"
}

func (c *Config) openPG(ctx context.Context, name string, dim int) (*instance, error) {
	pcfg, err := pgxpool.ParseConfig(c.PGDSN)
	if err != nil {
		// pgx's message may quote the DSN, password included.
		return nil, fmt.Errorf("%w: cannot parse the PostgreSQL DSN", ErrInvalidConfig)
	}
	pcfg.ConnConfig.BuildContextWatcherHandler = pgvector.CancelOnServer
	// One connection per concurrent client, and one spare.
	pcfg.MaxConns = int32(max(4, maxInts(c.Clients)) + 1)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	// A collection left over by an interrupted run would hold old records.
	if err := pgvector.DropCollection(ctx, pool, "", name); err != nil && !errors.Is(err, vectorstore.ErrNotFound) {
		pool.Close()
		return nil, err
	}
	// Zero pgvector.Options: the driver's defaults are what is measured.
	coll, err := pgvector.OpenCollection(ctx, pool, name, &pgvector.Options{Options: vectorstore.Options{Dimension: dim}})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &instance{
		coll: coll,
		settings: func(ctx context.Context) (Settings, error) {
			s := Settings{Backend: PGVector, Search: "HNSW", EfSearch: strconv.Itoa(pgvector.DefaultEfSearch) + " (raised to k+1 when larger)"}
			var def, version, server string
			if err := pool.QueryRow(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname LIKE '%hnsw' AND indexdef LIKE '%'||$1||'%'", "strata_vec_"+name).Scan(&def); err != nil {
				return s, fmt.Errorf("read HNSW index definition: %w", err)
			}
			s.M, s.EfConstruction = parseWith(def, "m"), parseWith(def, "ef_construction")
			if err := pool.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").Scan(&version); err != nil {
				return s, err
			}
			if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&server); err != nil {
				return s, err
			}
			var mwm, sb string
			_ = pool.QueryRow(ctx, "SHOW maintenance_work_mem").Scan(&mwm)
			_ = pool.QueryRow(ctx, "SHOW shared_buffers").Scan(&sb)
			s.Notes = fmt.Sprintf("PostgreSQL %s, pgvector %s, HNSW index built once after a bulk load into an empty table (maintenance_work_mem 1GB for that build), else maintained on insert, iterative_scan strict_order; shared_buffers %s, server maintenance_work_mem %s; Upsert batches of >= %d records go through COPY",
				strings.Fields(server)[0], version, sb, mwm, pgvector.DefaultCopyThreshold)
			return s, nil
		},
		drop: func(ctx context.Context) error {
			err := coll.Close()
			err = errors.Join(err, pgvector.DropCollection(ctx, pool, "", name))
			pool.Close()
			return err
		},
		scans: func(ctx context.Context) (seq, idx int64, err error) {
			// A session publishes its statistics at most once a second,
			// or after 10 s idle; ask every pooled session to publish now
			// so that the counts include the queries just run.
			for _, conn := range pool.AcquireAllIdle(ctx) {
				_, ferr := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
				conn.Release()
				if ferr != nil {
					return 0, 0, ferr
				}
			}
			select {
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			table := pgx.Identifier{pgvector.TablePrefix + name}.Sanitize()
			err = pool.QueryRow(ctx, "SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relid = $1::regclass", table).Scan(&seq, &idx)
			return seq, idx, err
		},
		withEfSearch: func(ctx context.Context, ef int) (*vectorstore.Collection, error) {
			return pgvector.OpenCollection(ctx, pool, name, &pgvector.Options{EfSearch: ef})
		},
		bulkLoad: func(ctx context.Context, recs []vectorstore.Record, batch int) (load, build time.Duration, err error) {
			return pgBulkLoad(ctx, pool, name+"_bulk", recs, batch)
		},
	}, nil
}

// pgBulkLoad loads recs into a collection created without an index (the
// driver's Index: none), then builds the HNSW index the driver would have
// made, with the driver's default m and ef_construction, in one CREATE
// INDEX: pgvector's documentation recommends this order for initial
// loads. The collection is dropped afterwards.
func pgBulkLoad(ctx context.Context, pool *pgxpool.Pool, name string, recs []vectorstore.Record, batch int) (load, build time.Duration, err error) {
	if err := pgvector.DropCollection(ctx, pool, "", name); err != nil && !errors.Is(err, vectorstore.ErrNotFound) {
		return 0, 0, err
	}
	dim := len(recs[0].Vector)
	coll, err := pgvector.OpenCollection(ctx, pool, name, &pgvector.Options{Options: vectorstore.Options{Dimension: dim}, Index: pgvector.IndexNone})
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		err = errors.Join(err, coll.Close(), pgvector.DropCollection(context.WithoutCancel(ctx), pool, "", name))
	}()
	t0 := time.Now()
	for lo := 0; lo < len(recs); lo += batch {
		if err := coll.Upsert(ctx, recs[lo:min(lo+batch, len(recs))]...); err != nil {
			return 0, 0, err
		}
	}
	load = time.Since(t0)
	t1 := time.Now()
	table := pgx.Identifier{pgvector.TablePrefix + name}.Sanitize()
	if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE INDEX ON %s USING hnsw (embedding vector_cosine_ops) WITH (m = %d, ef_construction = %d)",
		table, pgvector.DefaultM, pgvector.DefaultEfConstruction)); err != nil {
		return load, 0, fmt.Errorf("create index: %w", err)
	}
	return load, time.Since(t1), nil
}

// parseWith reads "key = 16" or "key='16'" from an index definition's WITH
// clause; 0 when absent.
func parseWith(def, key string) int {
	i := strings.Index(def, "WITH (")
	if i < 0 {
		return 0
	}
	for _, part := range strings.Split(strings.TrimSuffix(def[i+6:], ")"), ",") {
		k, v, ok := strings.Cut(part, "=")
		if ok && strings.TrimSpace(k) == key {
			n, _ := strconv.Atoi(strings.Trim(strings.TrimSpace(v), "'"))
			return n
		}
	}
	return 0
}

func (c *Config) openQdrant(ctx context.Context, name string, dim int) (*instance, error) {
	host, port, err := net.SplitHostPort(c.QdrantAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: qdrant address %q is not host:port: %w", ErrInvalidConfig, c.QdrantAddr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("%w: qdrant port %q: %w", ErrInvalidConfig, port, err)
	}
	client, err := qc.NewClient(&qc.Config{Host: host, Port: p, APIKey: os.Getenv("QDRANT_API_KEY"), SkipCompatibilityCheck: true})
	if err != nil {
		return nil, err
	}
	if ok, err := client.CollectionExists(ctx, name); err == nil && ok {
		if err := client.DeleteCollection(ctx, name); err != nil {
			client.Close()
			return nil, err
		}
	}
	u := "qdrant://" + c.QdrantAddr + "?collection=" + name + "&pool=" + strconv.Itoa(max(1, maxInts(c.Clients)))
	coll, err := vectorstore.Open(ctx, u, &vectorstore.Options{Dimension: dim})
	if err != nil {
		client.Close()
		return nil, err
	}
	return &instance{
		coll: coll,
		ready: func(ctx context.Context) error {
			// Qdrant acknowledges writes before its optimizer has indexed
			// them; wait for the collection to turn green.
			for {
				info, err := client.GetCollectionInfo(ctx, name)
				if err != nil {
					return err
				}
				if info.GetStatus() == qc.CollectionStatus_Green {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		},
		settings: func(ctx context.Context) (Settings, error) {
			s := Settings{Backend: Qdrant, Search: "HNSW", EfSearch: "server default (hnsw_ef unset)"}
			info, err := client.GetCollectionInfo(ctx, name)
			if err != nil {
				return s, err
			}
			h := info.GetConfig().GetHnswConfig()
			s.M, s.EfConstruction = int(h.GetM()), int(h.GetEfConstruct())
			version := "?"
			if hc, err := client.HealthCheck(ctx); err == nil {
				version = hc.GetVersion()
			}
			s.Notes = fmt.Sprintf("Qdrant %s over gRPC; full_scan_threshold %d KB (smaller segments are searched exactly); %d of %d vectors indexed after the wait",
				version, h.GetFullScanThreshold(), info.GetIndexedVectorsCount(), info.GetPointsCount())
			return s, nil
		},
		drop: func(ctx context.Context) error {
			err := coll.Close()
			err = errors.Join(err, client.DeleteCollection(ctx, name))
			return errors.Join(err, client.Close())
		},
	}, nil
}

func maxInts(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
