package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// parseItems parses --items: "A-B" (both included, as the history plan
// prints its spans), "N" or "log:N" (a cleared output's or compaction
// event's reference), into the half-open range [from, to).
func parseItems(s string) (from, to int, err error) {
	bad := usageErrorf("--items %q: want A-B, N or log:N (log item indices)", s)
	num := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0 && strconv.Itoa(n) == v
	}
	if strings.HasPrefix(s, "log:") {
		n, err := inspect.ParseLogRef(s)
		if err != nil {
			return 0, 0, bad
		}
		return n, n + 1, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	from, ok := num(a)
	if !ok {
		return 0, 0, bad
	}
	if !isRange {
		return from, from + 1, nil
	}
	last, ok := num(b)
	if !ok {
		return 0, 0, bad
	}
	if last < from {
		return 0, 0, usageErrorf("--items %q: the range ends before it starts", s)
	}
	return from, last + 1, nil
}

// logItemsOut is --items --json: the turn, the half-open range and the
// items with their log references.
type logItemsOut struct {
	ThreadID   string    `json:"thread_id"`
	ResourceID string    `json:"resource_id,omitempty"`
	Turn       int       `json:"turn"`
	RunID      string    `json:"run_id"`
	LogLen     int       `json:"log_len"`
	From       int       `json:"from"`
	To         int       `json:"to"`
	Items      []logItem `json:"items"`
}

type logItem struct {
	Ref string `json:"ref"`
	core.Item
}

// showLogItems prints --items of --turn N's record, else of the newest.
func (a *app) showLogItems(ctx context.Context, st storage.Store, loc, resource, thread, whose string, f *inspectFlags) error {
	var rec *inspect.Plan
	var err error
	if f.turn >= 0 {
		rec, err = inspect.ReadAssembly(ctx, st, resource, thread, f.turn)
		if errors.Is(err, storage.ErrNotFound) {
			return notFoundf("no record of turn %d for %s in %s (memctl inspect --list shows the turns kept)", f.turn, whose, loc)
		}
	} else {
		rec, err = inspect.LatestAssembly(ctx, st, resource, thread)
		if errors.Is(err, storage.ErrNotFound) {
			return notFoundf("no recorded turns for %s in %s (the runtime records them when core.Config.RecordAssemblies is on)", whose, loc)
		}
	}
	if err != nil {
		return err
	}
	return a.printLogItems(ctx, st, rec, resource, thread, f)
}

// printLogItems reads --items from the stored log of rec's run and
// prints them in full.
func (a *app) printLogItems(ctx context.Context, st storage.Store, rec *inspect.Plan, resource, thread string, f *inspectFlags) error {
	from, to, err := parseItems(f.items)
	if err != nil {
		return err
	}
	items, err := inspect.ReadLogItems(ctx, st, resource, thread, rec, from, to)
	var re *inspect.LogRangeError
	switch {
	case errors.As(err, &re):
		if re.Len == 0 {
			return notFoundf("--items %s: the log of turn %d is empty", f.items, rec.Turn)
		}
		return notFoundf("--items %s: turn %d's run logged items 0-%d", f.items, rec.Turn, re.Len-1)
	case errors.Is(err, inspect.ErrNoStoredLog):
		return notFoundf("turn %d of thread %q keeps no stored log (recorded by an older runtime)", rec.Turn, thread)
	case errors.Is(err, storage.ErrNotFound):
		return notFoundf("the stored log of turn %d is gone: %s", rec.Turn, Message(err))
	case err != nil:
		return err
	}
	if a.flags.json {
		out := logItemsOut{ThreadID: thread, ResourceID: resource, Turn: rec.Turn, RunID: rec.RunID, LogLen: rec.Stored.Log.Len, From: from, To: to,
			Items: make([]logItem, len(items))}
		for i, it := range items {
			out.Items[i] = logItem{Ref: fmt.Sprintf("log:%d", from+i), Item: it}
		}
		return writeJSONIndent(a.io.Out, out)
	}
	w := a.io.Out
	of := ""
	if resource != "" {
		of = " of resource " + esc(resource)
	}
	fmt.Fprintf(w, "Thread %s%s: turn %d (turn %d of run %s), log items %d-%d of %d\n", esc(thread), of, rec.Turn, rec.RunTurn, esc(rec.RunID),
		from, to-1, rec.Stored.Log.Len)
	for i, it := range items {
		printLogItem(w, from+i, it)
	}
	return nil
}

// printLogItem prints one log item with its whole text on the lines
// after its head, indented and escaped.
func printLogItem(w io.Writer, idx int, it core.Item) {
	var head, body string
	parts := func() string {
		texts := make([]string, len(it.Content))
		for i, p := range it.Content {
			texts[i] = p.Text
		}
		return strings.Join(texts, "\n")
	}
	switch it.Type {
	case core.TypeMessage:
		head, body = string(it.Role), it.Text()
	case core.TypeFunctionCall:
		head, body = "call "+it.CallID+" "+it.Name, it.Arguments
	case core.TypeFunctionCallOutput:
		head, body = "output "+it.CallID, it.Output
	case core.TypeCompaction:
		head, body = "compaction", parts()
		if c := it.Compaction; c != nil {
			head = fmt.Sprintf("compaction through log item %d (turn %d)", c.Through, c.Turn)
		}
	default:
		head, body = string(it.Type), parts()
	}
	if it.ID != "" {
		head += " (" + it.ID + ")"
	}
	fmt.Fprintf(w, "\nlog:%d %s\n", idx, esc(head))
	if body != "" {
		fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(escText(strings.TrimRight(body, "\n")), "\n", "\n    "))
	}
}

// remoteLog is the runtime's store as a server's state API shows it,
// read-only: the stored log chunks of a thread are the keys of its
// "_strata" state, read with GET /v1/state/_strata/NAME.
type remoteLog struct {
	rc               *remote
	resource, thread string
}

func (r *remoteLog) Get(ctx context.Context, k storage.Key) (storage.Entry, error) {
	if k.Scope != "thread" || k.ScopeID != storage.ThreadScopeID(r.resource, r.thread) {
		return storage.Entry{}, fmt.Errorf("through --server, key %s is not of thread %q: %w", k, r.thread, storage.ErrNotFound)
	}
	q := url.Values{"thread": {r.thread}}
	if r.resource != "" {
		q.Set("resource", r.resource)
	}
	var v remoteStateValue
	err := r.rc.call(ctx, http.MethodGet, "/v1/state/"+url.PathEscape(k.Layer)+"/"+url.PathEscape(k.Name), q, nil, &v)
	if errors.Is(err, ErrNotFound) {
		return storage.Entry{}, fmt.Errorf("%w: %w", storage.ErrNotFound, err)
	}
	if err != nil {
		return storage.Entry{}, err
	}
	return storage.Entry{Value: v.Value, Revision: v.Revision}, nil
}

var errReadOnly = errors.New("the server's state is read here, not written")

func (r *remoteLog) Put(context.Context, storage.Key, []byte, int64) (int64, error) {
	return 0, errReadOnly
}
func (r *remoteLog) Delete(context.Context, storage.Key, int64) error { return errReadOnly }
func (r *remoteLog) Close() error                                     { return nil }
