package cachebench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stratamem/strata/core"
)

// world is the state the workload's layers render: what a real agent's
// layers would read from a clock, a workspace, an entity store and a search
// index. Each run gets its own copy, mutated by the script at the same
// points, so every strategy sees the same layer output turn for turn.
type world struct {
	now          time.Time
	instructions string
	files        []file
	entities     []entity
	corpus       []passage
	query        string
	hits         []int // corpus indexes retrieved for query
	recalled     []passage
	recall       []int // recalled indexes shown this turn (small-context)

	rec *recorder
}

type file struct {
	path  string
	lines []string
}

type entity struct{ name, kind, fact string }

type passage struct{ title, text string }

func (w *world) clone() *world {
	c := *w
	c.files = make([]file, len(w.files))
	for i, f := range w.files {
		c.files[i] = file{path: f.path, lines: slices.Clone(f.lines)}
	}
	c.entities = slices.Clone(w.entities)
	c.hits = slices.Clone(w.hits)
	c.recall = slices.Clone(w.recall)
	c.rec = &recorder{text: map[string]string{}}
	return &c
}

func (w *world) fileIndex(path string) int {
	for i, f := range w.files {
		if f.path == path {
			return i
		}
	}
	return -1
}

// recorder keeps each layer's latest fresh rendering. Recall hooks run on
// the runtime's goroutines, hence the lock; the harness reads it between
// assemblies to measure what changed (the optimum's "news").
type recorder struct {
	mu   sync.Mutex
	text map[string]string
}

func (r *recorder) note(id, text string) {
	r.mu.Lock()
	r.text[id] = text
	r.mu.Unlock()
}

func (r *recorder) get(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text[id]
}

// layerDef is one context layer of a workload. World layers render from the
// world; the scratchpad keeps its own state, written by the model through
// its provided function.
type layerDef struct {
	id        string
	slot      core.Slot
	placement core.Placement
	render    func(w *world) string
	// delta, when set, is the layer's renderDelta over rendered text: the
	// compact change from prev to next, ok=false for a full republish.
	delta   func(prev, next string) (string, bool)
	scratch bool
	// layer, when set, builds a real runtime layer for one run instead of
	// a rendered one (a memory layer over its own store, whose clock is
	// w.now). It must note each fresh output in w.rec under id, as the
	// rendered layers do, and returns what releases its store.
	layer func(ctx context.Context, w *world) (core.AnyLayer, func(), error)
}

// layerItems is a layer's output: one developer message named by the layer
// id, or nothing.
func layerItems(id, text string) []core.Item {
	if text == "" {
		return nil
	}
	it := core.DeveloperMessage(text)
	it.ID = id
	return []core.Item{it}
}

func itemsText(items []core.Item) string {
	parts := make([]string, 0, len(items))
	for _, it := range items {
		parts = append(parts, it.Text())
	}
	return strings.Join(parts, "\n")
}

// scratch is the scratchpad layer's state.
type scratch struct {
	Notes []string `json:"notes"`
}

type writeArgs struct {
	Notes []string `json:"notes" jsonschema:"the complete new notes, one entry per line"`
}

func renderScratch(s scratch) string {
	if len(s.Notes) == 0 {
		return ""
	}
	return "<scratchpad>\n" + strings.Join(s.Notes, "\n") + "\n</scratchpad>"
}

// snapshot copies every layer's latest fresh rendering.
func (r *recorder) snapshot() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.text)
}

// buildLayers turns the definitions into runtime layers bound to w. The
// returned func releases what the real layers hold; it is never nil.
func buildLayers(ctx context.Context, defs []layerDef, w *world) ([]core.AnyLayer, func(), error) {
	out := make([]core.AnyLayer, 0, len(defs))
	var releases []func()
	release := func() {
		for _, r := range slices.Backward(releases) {
			r()
		}
	}
	for _, d := range defs {
		if d.layer != nil {
			l, rel, err := d.layer(ctx, w)
			if err != nil {
				release()
				return nil, func() {}, fmt.Errorf("cachebench: layer %s: %w", d.id, err)
			}
			out = append(out, l)
			releases = append(releases, rel)
			continue
		}
		var renderDelta func(context.Context, core.RenderDeltaParams[struct{}]) (string, bool, error)
		if d.delta != nil {
			renderDelta = func(_ context.Context, p core.RenderDeltaParams[struct{}]) (string, bool, error) {
				text, ok := d.delta(itemsText(p.Prev), itemsText(p.Next))
				return text, ok, nil
			}
		}
		if d.scratch {
			out = append(out, core.Layer[scratch]{
				ID: d.id, Slot: d.slot, Scope: core.ScopeThread, Placement: d.placement,
				Hooks: core.Hooks[scratch]{
					Recall: func(_ context.Context, p core.RecallParams[scratch]) (core.Recall[scratch], error) {
						text := renderScratch(p.State)
						w.rec.note(d.id, text)
						return core.Recall[scratch]{Items: layerItems(d.id, text)}, nil
					},
				},
				Functions: []core.Function[scratch]{core.NewFunction("write", "Replace the scratchpad notes with a new list.",
					func(_ context.Context, _ scratch, a writeArgs) (string, *scratch, error) {
						return fmt.Sprintf("Scratchpad updated (%d notes).", len(a.Notes)), &scratch{Notes: a.Notes}, nil
					})},
			})
			continue
		}
		out = append(out, core.Layer[struct{}]{
			ID: d.id, Slot: d.slot, Scope: core.ScopeExecution, Placement: d.placement,
			Hooks: core.Hooks[struct{}]{
				Recall: func(context.Context, core.RecallParams[struct{}]) (core.Recall[struct{}], error) {
					text := d.render(w)
					w.rec.note(d.id, text)
					return core.Recall[struct{}]{Items: layerItems(d.id, text)}, nil
				},
				RenderDelta: renderDelta,
			},
		})
	}
	return out, release, nil
}

// The layers the workloads are built from.

func instructionsLayer() layerDef {
	return layerDef{id: "instructions", slot: 10, placement: core.PlacementAnchor,
		render: func(w *world) string { return w.instructions }}
}

// clockLayer grounds the current time: a new value on every request by
// construction, so it declares the live band: rendered after history, it
// never moves the cached prefix.
func clockLayer() layerDef {
	return layerDef{id: "clock", slot: core.SlotReminder, placement: core.PlacementLive,
		render: func(w *world) string {
			return fmt.Sprintf("<clock>Current date and time: %s (%s).</clock>",
				w.now.UTC().Format("2006-01-02 15:04:05 UTC"), w.now.UTC().Weekday())
		}}
}

func scratchpadLayer(p core.Placement) layerDef {
	return layerDef{id: "scratchpad", slot: core.SlotScratchpad, placement: p, scratch: true}
}

// entitiesLayer lists the entities met so far; it grows. Its delta
// publishes only the entries added or changed since the pin.
func entitiesLayer(p core.Placement) layerDef {
	return layerDef{id: "entities", slot: core.SlotEntity, placement: p,
		render: func(w *world) string {
			if len(w.entities) == 0 {
				return ""
			}
			var b strings.Builder
			b.WriteString("<entities>\nKnown entities of this conversation:\n")
			for _, e := range w.entities {
				fmt.Fprintf(&b, "- %s (%s): %s\n", e.name, e.kind, e.fact)
			}
			b.WriteString("</entities>")
			return b.String()
		},
		delta: func(prev, next string) (string, bool) {
			before := map[string]bool{}
			for _, l := range strings.Split(prev, "\n") {
				before[l] = true
			}
			var changed []string
			for _, l := range strings.Split(next, "\n") {
				if strings.HasPrefix(l, "- ") && !before[l] {
					changed = append(changed, l)
				}
			}
			if len(changed) == 0 {
				return "", false
			}
			return "Entities added or updated (an entry replaces the earlier one with the same name):\n" + strings.Join(changed, "\n"), true
		}}
}

// filesLayer renders the workspace's files, one "## path" section each.
// Its delta republishes only the sections that changed, as
// layers/filesystem does.
func filesLayer() layerDef {
	return layerDef{id: "filesystem", slot: 320, placement: core.PlacementAnchor,
		render: func(w *world) string {
			var b strings.Builder
			b.WriteString("Workspace files (current content):")
			for _, f := range w.files {
				fmt.Fprintf(&b, "\n\n## %s\n```go\n%s\n```", f.path, strings.Join(f.lines, "\n"))
			}
			return b.String()
		},
		delta: func(prev, next string) (string, bool) {
			before := sections(prev)
			var changed []string
			for _, s := range sectionList(next) {
				if before[s.path] != s.body {
					changed = append(changed, s.body)
				}
			}
			if len(changed) == 0 {
				return "", false
			}
			return "Files changed since the workspace block above (full new content of each):\n\n" + strings.Join(changed, "\n\n"), true
		}}
}

type section struct{ path, body string }

// sectionList splits rendered files at each "\n## " heading.
func sectionList(text string) []section {
	var out []section
	for _, chunk := range strings.Split(text, "\n\n## ") {
		path, _, ok := strings.Cut(chunk, "\n")
		if !ok || strings.HasPrefix(chunk, "Workspace files") {
			continue
		}
		out = append(out, section{path: path, body: "## " + chunk})
	}
	return out
}

func sections(text string) map[string]string {
	m := map[string]string{}
	for _, s := range sectionList(text) {
		m[s.path] = s.body
	}
	return m
}

// retrievalLayer shows the passages retrieved for the current query;
// nothing when there is none.
func retrievalLayer(p core.Placement) layerDef {
	return layerDef{id: "retrieval", slot: core.SlotRAG, placement: p,
		render: func(w *world) string {
			if w.query == "" || len(w.hits) == 0 {
				return ""
			}
			var b strings.Builder
			fmt.Fprintf(&b, "<retrieved query=%q>\n", w.query)
			for n, i := range w.hits {
				fmt.Fprintf(&b, "[%d] %s\n%s\n", n+1, w.corpus[i].title, w.corpus[i].text)
			}
			b.WriteString("</retrieved>")
			return b.String()
		}}
}
