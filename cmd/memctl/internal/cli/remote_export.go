package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/storage"
)

// remoteStatsAnswer is GET /v1/stats's answer.
type remoteStatsAnswer struct {
	Backend    string         `json:"backend"`
	Collection string         `json:"collection"`
	Embedder   string         `json:"embedder"`
	Dimension  int            `json:"dimension"`
	Distance   string         `json:"distance"`
	Resource   string         `json:"resource"`
	Records    int            `json:"records"`
	ByLayer    map[string]int `json:"by_layer"`
	ByKind     map[string]int `json:"by_kind"`
	ByScope    map[string]int `json:"by_scope"`
	Threads    int            `json:"threads"`
	Resources  int            `json:"resources"`
	DataBytes  int64          `json:"data_bytes"`
	Embeddings map[string]int `json:"embeddings"`
}

// remoteOnlyResource refuses the filters the server's counts and
// listings do not take.
func remoteOnlyResource(what string, f *filterFlags, listing bool) error {
	if len(f.ids) > 0 || len(f.meta) > 0 || f.since != "" || f.until != "" || f.validAt != "" || f.text != "" ||
		(!listing && (f.layer != "" || f.kind != "" || f.thread != "")) {
		if listing {
			return usageErrorf("through --server, %s takes --resource, --layer, --kind and --thread", what)
		}
		return usageErrorf("through --server, %s takes --resource only", what)
	}
	return nil
}

func (rc *remote) stats(ctx context.Context, resource string) (remoteStatsAnswer, error) {
	q := url.Values{}
	if resource != "" {
		q.Set("resource", resource)
	}
	var st remoteStatsAnswer
	err := rc.call(ctx, http.MethodGet, "/v1/stats", q, nil, &st)
	return st, err
}

// remoteStats prints the server's counts (GET /v1/stats).
func (a *app) remoteStats(ctx context.Context, rc *remote, f *filterFlags) error {
	if err := remoteOnlyResource("stats", f, false); err != nil {
		return err
	}
	st, err := rc.stats(ctx, f.resource)
	if err != nil {
		return err
	}
	out := storeStats{Store: rc.base.Redacted(), StoreSource: "--server", Backend: st.Backend + " (through the server)",
		Collection: st.Collection, Embedder: st.Embedder, EmbedderSrc: "the server's", Dimension: st.Dimension, Distance: st.Distance,
		Records: st.Records, ByLayer: st.ByLayer, ByKind: st.ByKind, ByScope: st.ByScope, Threads: st.Threads,
		Resources: st.Resources, DataBytes: st.DataBytes, Embeddings: st.Embeddings}
	if st.Resource != "" {
		out.Resources = 1
	}
	return a.printStats(&out)
}

// remoteExport writes an export (exportfmt) of one resource through the
// server: its records page by page with their vectors, then its layer
// state byte for byte. See the export command's help for what it leaves
// out.
func (a *app) remoteExport(ctx context.Context, rc *remote, path string, f *exportFlags) error {
	if err := remoteOnlyResource("export", &f.filterFlags, true); err != nil {
		return err
	}
	// The stats say what the vectors are and, for a key of one resource,
	// which resource it is.
	st, err := rc.stats(ctx, f.resource)
	if err != nil {
		return err
	}
	resource := f.resource
	if resource == "" {
		resource = st.Resource
	}
	if resource == "" {
		return usageErrorf("through --server, export names the resource to export: --resource R")
	}
	filtered := f.layer != "" || f.kind != "" || f.thread != ""
	if filtered && !f.noState {
		fmt.Fprintln(a.io.Err, "memctl: export: the filters select records: no layer state exported (export without filters to move it)")
	}
	out, file, err := a.openExport(path)
	if err != nil {
		return err
	}
	if file != nil {
		defer os.Remove(file.Name())
		defer file.Close()
	}
	w := exportfmt.NewWriter(out)
	if !f.noHeader {
		h := exportfmt.Header{Dimension: st.Dimension, Distance: st.Distance}
		if f.noVectors {
			h.Distance = ""
		}
		if err := w.WriteHeader(h); err != nil {
			return err
		}
	}
	q := url.Values{"resource": {resource}, "limit": {"500"}, "terms": {"true"}}
	for k, v := range map[string]string{"layer": f.layer, "kind": f.kind, "thread": f.thread} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.noVectors {
		q.Set("vectors", "true")
	}
	for {
		var page struct {
			Memories []remoteMemory `json:"memories"`
			Next     string         `json:"next_page_token"`
		}
		if err := rc.call(ctx, http.MethodGet, "/v1/memories", q, nil, &page); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		for i := range page.Memories {
			r := page.Memories[i].record()
			r.Vector, r.Terms = page.Memories[i].Vector, page.Memories[i].Terms
			if err := w.Write(&r); err != nil {
				return fmt.Errorf("export: %w", err)
			}
		}
		if page.Next == "" {
			break
		}
		q.Set("page_token", page.Next)
	}
	var sr stateResult
	if !f.noState && !filtered {
		if err := a.remoteExportState(ctx, rc, w, resource, f, &sr); err != nil {
			return fmt.Errorf("export: layer state through %s: %w", esc(rc.base.Redacted()), err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if file != nil {
		if err := placeExport(file, path); err != nil {
			return err
		}
		fmt.Fprintf(a.io.Err, "exported %s of resource %s through %s to %s\n", exported(w.Count(), !f.noState && !filtered, sr),
			esc(resource), esc(rc.base.Redacted()), esc(path))
	}
	return nil
}

// remoteExportState writes the state keys of resource and its threads as
// state lines, each value's stored bytes (?raw=true). A server with no
// state store has none to write.
func (a *app) remoteExportState(ctx context.Context, rc *remote, w *exportfmt.Writer, resource string, f *exportFlags, res *stateResult) error {
	var list struct {
		Keys []remoteKey `json:"keys"`
	}
	err := rc.call(ctx, http.MethodGet, "/v1/state", url.Values{"resource": {resource}}, nil, &list)
	if errors.Is(err, errNoRemoteState) {
		fmt.Fprintf(a.io.Err, "memctl: export: the server keeps no layer state: records only\n")
		return nil
	}
	if err != nil {
		return err
	}
	include := f.include()
	for _, rk := range list.Keys {
		k := rk.key()
		if include != nil && !include(k) {
			continue
		}
		v, err := a.remoteStateRaw(ctx, rc, resource, k)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", k, err)
		}
		if err := w.WriteState(k, v); err != nil {
			return err
		}
		res.Keys++
		if inspect.IsAssemblyKey(k) {
			res.Assemblies++
		}
	}
	return nil
}

// remoteStateRaw reads the stored bytes of key k of resource (as listed)
// through the server.
func (a *app) remoteStateRaw(ctx context.Context, rc *remote, resource string, k storage.Key) ([]byte, error) {
	q := url.Values{"raw": {"true"}}
	switch k.Scope {
	case "resource":
		q.Set("resource", k.ScopeID)
	case "thread":
		r, t := storage.SplitThreadScopeID(k.ScopeID)
		if r == "" {
			r = resource
		}
		q.Set("resource", r)
		q.Set("thread", t)
	default:
		return nil, fmt.Errorf("state key %s is of no resource", k)
	}
	var v struct {
		Raw []byte `json:"raw"`
	}
	if err := rc.call(ctx, http.MethodGet, "/v1/state/"+url.PathEscape(k.Layer)+"/"+url.PathEscape(k.Name), q, nil, &v); err != nil {
		return nil, err
	}
	if v.Raw == nil {
		return nil, fmt.Errorf("%w: the server sent no stored bytes for %s (is it older than this memctl?)", ErrServer, k)
	}
	return v.Raw, nil
}
