package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

// --server URL runs memctl's commands through a running strata server
// (strata serve) instead of opening the store: the process that serves
// the store stays its one owner, and memctl reads and changes what a live
// agent keeps through the server's HTTP API (/v1/...), with an API key
// ($STRATA_API_KEY) bound to the resources it may touch. The commands
// that go through it are those the API has routes for: ls, show, search,
// add, edit, rm ID..., stats, export, state ls|show|edit|rm and inspect;
// import, migrate, reindex, salvage and bench need the store's files or
// engine and say so (localOnly).

// EnvAPIKey is the environment variable that holds the API key --server
// sends.
const EnvAPIKey = "STRATA_API_KEY"

// ErrServer is wrapped by the errors a server answers with.
var ErrServer = errors.New("server")

// errNoRemoteState is wrapped when the server has no state store (501).
var errNoRemoteState = errors.New("no state store")

// remote is a strata server memctl talks to.
type remote struct {
	base *url.URL
	key  string
	hc   *http.Client
}

// remoteClient is the server --server names, nil when none is.
func (a *app) remoteClient() (*remote, error) {
	if a.flags.server == "" {
		return nil, nil
	}
	u, err := url.Parse(a.flags.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("--server %q: want http://host:port or https://host:port", a.flags.server)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &remote{base: u, key: os.Getenv(EnvAPIKey), hc: &http.Client{Timeout: a.flags.timeout}}, nil
}

// localOnly says why the commands that do not run through --server
// cannot: each needs what the server does not lend a client.
var localOnly = map[string]string{
	"import":  "it writes records in bulk with their vectors and replaces layer state, past the server's request limits",
	"migrate": "it changes the store's files or schema, which the serving process holds open",
	"reindex": "it re-embeds every record with an embedder of its own choosing, in the store's engine",
	"salvage": "it reads the damaged files of an embedded directory",
	"bench":   "it measures the store's engine itself, not the network",
}

// serverOnly refuses a command the server has no route for, naming why.
func (a *app) serverOnly(what string) error {
	if a.flags.server == "" {
		return nil
	}
	why := "the server's API has no route for it"
	if w, ok := localOnly[strings.Fields(what + " x")[0]]; ok {
		why = w
	}
	return usageErrorf("%s does not run through --server (%s); run it on the machine that serves the store, with --store", what, why)
}

// call sends one request and decodes the answer into out. An error answer
// is an error naming the server's code and message, with memctl's exit
// status: 404 not found (3), 400 usage (2), others 1.
func (r *remote) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	u := *r.base
	u.Path += path
	u.RawQuery = q.Encode()
	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		raw = b
	}
	resp, err := r.send(ctx, method, u.String(), raw)
	if err != nil {
		return fmt.Errorf("server %s: %w", r.base.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("server %s: %w", r.base.Redacted(), err)
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &eb) == nil && eb.Error.Message != "" {
			msg = eb.Error.Code + ": " + eb.Error.Message
		}
		err := fmt.Errorf("%w %s: %s %s: %s", ErrServer, r.base.Redacted(), method, path, msg)
		switch resp.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		case http.StatusBadRequest:
			return fmt.Errorf("%w: %w", ErrUsage, err)
		case http.StatusConflict:
			return fmt.Errorf("%w: %w", storage.ErrConflict, err)
		case http.StatusNotImplemented:
			return fmt.Errorf("%w: %w", errNoRemoteState, err)
		case http.StatusUnauthorized:
			return fmt.Errorf("%w (set $%s to an API key of the server)", err, EnvAPIKey)
		}
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("server %s: %s %s: unexpected answer: %w", r.base.Redacted(), method, path, err)
	}
	return nil
}

// maxRateRetries bounds how often one request waits out the server's
// rate limit (429 with Retry-After) before its error is returned.
const maxRateRetries = 5

// send sends one request (body as JSON when not nil). A request refused
// by the key's rate limit is sent again after the Retry-After the server
// names, a few times: an export or a state listing sends a request per
// page or key, and should slow down rather than fail half way.
func (r *remote) send(ctx context.Context, method, u string, body []byte) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, rd)
		if err != nil {
			return nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if r.key != "" {
			req.Header.Set("Authorization", "Bearer "+r.key)
		}
		resp, err := r.hc.Do(req)
		if err != nil {
			return nil, err
		}
		wait, werr := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || werr != nil || wait < 0 || wait > 30 || attempt == maxRateRetries {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t := time.NewTimer(time.Duration(wait) * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// remoteMemory is a memory as the server's API returns it.
type remoteMemory struct {
	ID        string            `json:"id"`
	Layer     string            `json:"layer"`
	Kind      string            `json:"kind"`
	Resource  string            `json:"resource"`
	Thread    string            `json:"thread"`
	Text      string            `json:"text"`
	Metadata  map[string]string `json:"metadata"`
	CreatedAt time.Time         `json:"created_at"`
	ValidFrom *time.Time        `json:"valid_from"`
	ValidTo   *time.Time        `json:"valid_to"`
	Revision  int64             `json:"revision"`
	Score     float64           `json:"score"`
	Vector    []float32         `json:"vector"`
	Terms     vectorstore.Terms `json:"terms"`
}

func (m *remoteMemory) record() vectorstore.Record {
	r := vectorstore.Record{ID: m.ID, Layer: m.Layer, Kind: m.Kind, Scope: vectorstore.Scope{Thread: m.Thread, Resource: m.Resource},
		Text: m.Text, Metadata: m.Metadata, CreatedAt: m.CreatedAt, Revision: m.Revision}
	if m.ValidFrom != nil {
		r.ValidFrom = *m.ValidFrom
	}
	if m.ValidTo != nil {
		r.ValidTo = *m.ValidTo
	}
	return r
}

// remoteLs lists through the server: the filters the API takes (layer,
// kind, thread, resource), a page or --all.
func (a *app) remoteLs(ctx context.Context, rc *remote, f *lsFlags) error {
	if len(f.ids) > 0 || len(f.meta) > 0 || f.since != "" || f.until != "" || f.validAt != "" || f.text != "" || !strings.HasSuffix(f.sort, "created") {
		return usageErrorf("through --server, ls takes --layer, --kind, --thread, --resource, --limit, --page-token, --all and --sort created|-created")
	}
	q := url.Values{}
	for k, v := range map[string]string{"resource": f.resource, "layer": f.layer, "kind": f.kind, "thread": f.thread, "page_token": f.pageToken} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.sort == "-created" {
		q.Set("order", "newest")
	}
	q.Set("limit", strconv.Itoa(min(f.limit, 1000)))
	var recs []vectorstore.Record
	next := ""
	for {
		var page struct {
			Memories []remoteMemory `json:"memories"`
			Next     string         `json:"next_page_token"`
		}
		if err := rc.call(ctx, http.MethodGet, "/v1/memories", q, nil, &page); err != nil {
			return err
		}
		for i := range page.Memories {
			recs = append(recs, page.Memories[i].record())
		}
		next = page.Next
		if !f.all || next == "" {
			break
		}
		q.Set("page_token", next)
	}
	if err := a.printRecords(recs, nil); err != nil {
		return err
	}
	if next != "" && !f.all {
		fmt.Fprintf(a.io.Err, "more records: --page-token %s\n", esc(next))
	}
	return nil
}

// remoteSearch searches through the server.
func (a *app) remoteSearch(ctx context.Context, rc *remote, text string, f *searchFlags) error {
	if len(f.ids) > 0 || len(f.meta) > 0 || f.since != "" || f.until != "" || f.validAt != "" || f.text != "" || f.kind != "" {
		return usageErrorf("through --server, search takes --layer, --thread, --resource, --limit and --min-score")
	}
	var res struct {
		Memories []remoteMemory `json:"memories"`
	}
	body := map[string]any{"query": text, "resource": f.resource, "layer": f.layer, "thread": f.thread, "k": min(f.limit, 100)}
	if err := rc.call(ctx, http.MethodPost, "/v1/search", nil, body, &res); err != nil {
		return err
	}
	recs, scores := []vectorstore.Record{}, []float64{}
	for i := range res.Memories {
		if res.Memories[i].Score < f.minScore {
			continue
		}
		recs = append(recs, res.Memories[i].record())
		scores = append(scores, res.Memories[i].Score)
	}
	return a.printRecords(recs, scores)
}

// remoteRecord reads one memory through the server.
func (a *app) remoteRecord(ctx context.Context, rc *remote, id string) (vectorstore.Record, error) {
	var m remoteMemory
	if err := rc.call(ctx, http.MethodGet, "/v1/memories/"+url.PathEscape(id), nil, nil, &m); err != nil {
		return vectorstore.Record{}, err
	}
	return m.record(), nil
}

// remoteRm deletes memories by id through the server.
func (a *app) remoteRm(ctx context.Context, rc *remote, ids []string, dryRun bool) error {
	var deleted []string
	for _, id := range ids {
		if dryRun {
			if _, err := a.remoteRecord(ctx, rc, id); err != nil {
				return err
			}
			deleted = append(deleted, id)
			continue
		}
		if err := rc.call(ctx, http.MethodDelete, "/v1/memories/"+url.PathEscape(id), nil, nil, nil); err != nil {
			return err
		}
		deleted = append(deleted, id)
	}
	if a.flags.json {
		return writeJSON(a.io.Out, map[string]any{"deleted": len(deleted), "ids": deleted, "dry_run": dryRun})
	}
	verb := "deleted"
	if dryRun {
		verb = "would delete (dry run)"
	}
	fmt.Fprintf(a.io.Out, "%s %s through %s\n", verb, plural(len(deleted), "memory", "memories"), esc(rc.base.Redacted()))
	return nil
}

// remoteStateQuery is the query naming a state key (or a listing's
// scope) in the server's API.
func remoteStateQuery(f *stateKeyFlags) (url.Values, error) {
	q := url.Values{}
	switch f.scope {
	case "global":
		if f.thread != "" || f.resource != "" {
			return nil, usageErrorf("a global key has no thread or resource")
		}
		q.Set("scope", "global")
	case "", "thread", "resource":
		if f.scope == "thread" && f.thread == "" {
			return nil, usageErrorf("--scope thread needs --thread")
		}
		if f.scope == "resource" && f.thread != "" {
			return nil, usageErrorf("--scope resource needs --resource and no --thread")
		}
	default:
		return nil, usageErrorf("--scope %q: want thread, resource or global", f.scope)
	}
	if f.resource != "" {
		q.Set("resource", f.resource)
	}
	if f.thread != "" {
		q.Set("thread", f.thread)
	}
	return q, nil
}

// remoteKey is a storage key as the server's API writes it.
type remoteKey struct {
	Scope, ScopeID, Layer, Name string
}

func (k remoteKey) key() storage.Key {
	return storage.Key{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name}
}

// remoteStateValue is a state value as the server's API returns it: JSON
// (a value that is not JSON comes as a JSON string).
type remoteStateValue struct {
	Key      remoteKey       `json:"key"`
	Value    json.RawMessage `json:"value"`
	Revision int64           `json:"revision"`
}

// remoteStateLs lists state keys through the server, with their revisions
// and sizes.
func (a *app) remoteStateLs(ctx context.Context, rc *remote, f *stateKeyFlags, noAssemblies bool) error {
	q, err := remoteStateQuery(f)
	if err != nil {
		return err
	}
	if f.layer != "" {
		q.Set("layer", f.layer)
	}
	var list struct {
		Keys []remoteKey `json:"keys"`
	}
	if err := rc.call(ctx, http.MethodGet, "/v1/state", q, nil, &list); err != nil {
		return err
	}
	var entries []stateRow
	for _, rk := range list.Keys {
		k := rk.key()
		if noAssemblies && inspect.IsAssemblyKey(k) {
			continue
		}
		v, err := a.remoteStateGet(ctx, rc, f, k)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return err
		}
		entries = append(entries, stateRow{k: k, e: storage.Entry{Value: v.Value, Revision: v.Revision}})
	}
	return a.printStateRows(entries, rc.base.Redacted())
}

// remoteStateGet reads key k (as listed) through the server.
func (a *app) remoteStateGet(ctx context.Context, rc *remote, f *stateKeyFlags, k storage.Key) (remoteStateValue, error) {
	q := url.Values{}
	switch k.Scope {
	case "global":
		q.Set("scope", "global")
	case "resource":
		q.Set("resource", k.ScopeID)
	case "thread":
		r, t := storage.SplitThreadScopeID(k.ScopeID)
		if r == "" {
			r = f.resource
		}
		q.Set("resource", r)
		q.Set("thread", t)
	}
	var v remoteStateValue
	err := rc.call(ctx, http.MethodGet, "/v1/state/"+url.PathEscape(k.Layer)+"/"+url.PathEscape(k.Name), q, nil, &v)
	return v, err
}

// remoteStateKey reads the key the flags and args name through the
// server.
func (a *app) remoteStateKey(ctx context.Context, rc *remote, f *stateKeyFlags, args []string) (storage.Key, remoteStateValue, url.Values, error) {
	q, err := remoteStateQuery(f)
	if err != nil {
		return storage.Key{}, remoteStateValue{}, nil, err
	}
	name := "state"
	if len(args) > 1 {
		name = args[1]
	}
	var v remoteStateValue
	path := "/v1/state/" + url.PathEscape(args[0]) + "/" + url.PathEscape(name)
	if err := rc.call(ctx, http.MethodGet, path, q, nil, &v); err != nil {
		return storage.Key{}, v, q, err
	}
	return v.Key.key(), v, q, nil
}
