package scalebench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/semantic"
)

// Embedder names of the ingest case.
const (
	EmbedHash    = "hash"
	EmbedUseLite = "uselite"
)

// IngestConfig describes the ingest case: one user's new conversations
// written through the public API, with a real embedder.
type IngestConfig struct {
	Backend string
	// Embedder is EmbedUseLite (the default model, installed by `make
	// model`) or EmbedHash.
	Embedder string
	// Messages is the total written; 0 means 2000.
	Messages int
	// SessionLen is the messages per session; 0 means 40.
	SessionLen int
	// ScratchDir holds the embedded store ("" means os.TempDir()); it is
	// removed afterwards.
	ScratchDir string
	PGDSN      string
	Logf       func(format string, args ...any) `json:"-"`
}

// IngestResult is what the ingest case measured.
type IngestResult struct {
	Backend  string `json:"backend"`
	Embedder string `json:"embedder"`
	Model    string `json:"model"`
	Messages int    `json:"messages"`
	Sessions int    `json:"sessions"`
	// Seconds is the wall time from the first Start to the last
	// Complete (every message stored and embedded).
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"rate"` // messages per second
	// AppendRecord is one exchange: Append(user) + Record(assistant).
	AppendRecord Dist `json:"append_record"`
	// Complete is each session's Complete (it embeds what is left).
	Complete Dist   `json:"complete"`
	Err      string `json:"error,omitempty"`
	Skipped  string `json:"skipped,omitempty"`
}

// Ingest writes IngestConfig.Messages messages of one resource into an
// empty store, in sessions of SessionLen messages: Start, Append(user) and
// Record(assistant) alternating, Complete, with a resource-scoped semantic
// layer, on the real disk (every write durable). No Assemble: this is the
// write path only.
func Ingest(ctx context.Context, c IngestConfig) (IngestResult, error) {
	if c.Messages <= 0 {
		c.Messages = 2000
	}
	if c.SessionLen <= 0 {
		c.SessionLen = 40
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	r := IngestResult{Backend: c.Backend, Embedder: c.Embedder, Messages: c.Messages}
	var emb embed.Embedder
	switch c.Embedder {
	case EmbedHash:
		emb = hashing.New(DefaultDimension)
	case EmbedUseLite, "":
		r.Embedder = EmbedUseLite
		m, err := uselite.Default()
		if err != nil {
			return r, fmt.Errorf("scalebench: the default model (run `make model`): %w", err)
		}
		emb = m
	default:
		return r, fmt.Errorf("scalebench: unknown embedder %q (hash or uselite)", c.Embedder)
	}
	r.Model = emb.Model()
	var be *backend
	var err error
	switch c.Backend {
	case Embedded:
		dir, derr := os.MkdirTemp(c.ScratchDir, "scalebench-ingest-")
		if derr != nil {
			return r, derr
		}
		defer os.RemoveAll(dir)
		be, err = openEmbedded(ctx, dir, emb)
	case PGVector:
		if c.PGDSN == "" {
			return r, fmt.Errorf("scalebench: backend pgvector needs a PostgreSQL DSN (STRATA_TEST_PG_DSN)")
		}
		name := "scale_ingest_" + r.Embedder
		if err := dropPG(ctx, c.PGDSN, name); err != nil {
			return r, err
		}
		defer dropPG(context.WithoutCancel(ctx), c.PGDSN, name)
		be, err = openPG(ctx, c.PGDSN, name, emb)
	default:
		return r, fmt.Errorf("scalebench: unknown backend %q", c.Backend)
	}
	if err != nil {
		return r, err
	}
	defer be.close()
	layer, err := semantic.New(be.mem, semantic.Options{Common: memory.Common{Scope: core.ScopeResource}})
	if err != nil {
		return r, err
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{layer}, Store: be.state})
	if err != nil {
		return r, err
	}
	res := fmt.Sprintf("ingest-%s-%d", r.Embedder, time.Now().UnixNano())
	var ar, comp []time.Duration
	begin := time.Now()
	for k, left := 0, c.Messages; left > 0; k++ {
		n := min(c.SessionLen, left)
		left -= n
		conv := Conversation{Resource: res, Thread: fmt.Sprintf("%s-s%04d", res, k), Msgs: n}
		s, err := rt.Start(ctx, core.RunOptions{ThreadID: conv.Thread, ResourceID: res})
		if err != nil {
			return r, err
		}
		items := conv.Items()
		for j := 0; j < len(items); j += 2 {
			t := time.Now()
			if err := s.Append(ctx, items[j]); err != nil {
				return r, err
			}
			if j+1 < len(items) {
				if err := s.Record(ctx, items[j+1]); err != nil {
					return r, err
				}
			}
			ar = append(ar, time.Since(t))
		}
		t := time.Now()
		if err := s.Complete(ctx, "ok"); err != nil {
			return r, err
		}
		comp = append(comp, time.Since(t))
		r.Sessions++
	}
	r.Seconds = time.Since(begin).Seconds()
	r.Rate = float64(c.Messages) / r.Seconds
	r.AppendRecord, r.Complete = dist(ar, 0), dist(comp, 0)
	return r, nil
}
