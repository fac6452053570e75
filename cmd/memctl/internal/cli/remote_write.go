package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/storage"
)

// remoteWritten is the server's answer to a write.
type remoteWritten struct {
	Written []struct {
		ID       string `json:"id"`
		Layer    string `json:"layer"`
		Kind     string `json:"kind"`
		Action   string `json:"action"`
		Text     string `json:"text"`
		Revision int64  `json:"revision"`
	} `json:"written"`
	ContextsDeleted int `json:"contexts_deleted"`
}

func (w *remoteWritten) written() []written {
	out := make([]written, len(w.Written))
	for i, x := range w.Written {
		out[i] = written{ID: x.ID, Layer: x.Layer, Kind: x.Kind, Action: x.Action, Text: x.Text}
	}
	return out
}

// remoteAdd adds a memory through the server (POST /v1/memories), which
// writes it through the same layer path as a local add and embeds it.
// The flags were checked as for a local add.
func (a *app) remoteAdd(ctx context.Context, rc *remote, cmd *cobra.Command, f *addFlags, scope core.Scope, md map[string]string, validFrom, validTo time.Time) error {
	body := map[string]any{"layer": f.layer, "scope": string(scope), "resource": f.resource, "thread": f.thread,
		"text": f.text, "kind": f.kind}
	if f.layerType != "" {
		body["layer_type"] = f.layerType
	}
	if len(md) > 0 {
		body["metadata"] = md
	}
	if !validFrom.IsZero() {
		body["valid_from"] = validFrom
	}
	if !validTo.IsZero() {
		body["valid_to"] = validTo
	}
	for flag, field := range map[string]string{"name": "name", "type": "type", "key": "key", "subject": "subject",
		"predicate": "predicate", "value": "value", "when": "when", "role": "role", "run": "run", "outcome": "outcome"} {
		if v, _ := cmd.Flags().GetString(flag); v != "" {
			body[field] = v
		}
	}
	if f.priority != 0 {
		body["priority"] = f.priority
	}
	if f.importance != 0 {
		body["importance"] = f.importance
	}
	if len(f.sources) > 0 {
		body["sources"] = f.sources
	}
	var res remoteWritten
	if err := rc.call(ctx, http.MethodPost, "/v1/memories", nil, body, &res); err != nil {
		return err
	}
	return a.printWritten(res.written())
}

// remoteEdit edits a memory through the server: read it (with its
// revision), change it here as a local edit does (flags, --file or
// $EDITOR, the server's connection idle meanwhile), and write it back
// with PUT /v1/memories/ID at the revision read. The server validates and
// re-embeds; a write made since the read is a conflict that writes
// nothing.
func (a *app) remoteEdit(ctx context.Context, rc *remote, cmd *cobra.Command, id string, f *editFlags, ch editChanges) error {
	old, err := a.remoteRecord(ctx, rc, id)
	if err != nil {
		return err
	}
	r := old.Clone()
	if err := a.applyEdit(cmd, f, ch, &old, &r, nil); err != nil {
		return err
	}
	body := map[string]any{"revision": old.Revision, "layer": r.Layer, "kind": r.Kind, "resource": r.Scope.Resource,
		"thread": r.Scope.Thread, "text": r.Text, "metadata": r.Metadata}
	if f.layerType != "" {
		body["layer_type"] = f.layerType
	}
	if !r.ValidFrom.IsZero() {
		body["valid_from"] = r.ValidFrom
	}
	if !r.ValidTo.IsZero() {
		body["valid_to"] = r.ValidTo
	}
	var res remoteWritten
	err = rc.call(ctx, http.MethodPut, "/v1/memories/"+url.PathEscape(id), nil, body, &res)
	if errors.Is(err, storage.ErrConflict) {
		return fmt.Errorf("memory %s changed on %s while it was edited: nothing written; run memctl edit again: %w", id, esc(rc.base.Redacted()), err)
	}
	if err != nil {
		return err
	}
	if res.ContextsDeleted > 0 {
		fmt.Fprintf(a.io.Err, "memctl: deleted %s of the semantic layer that quoted the old message; the layer writes them again\n",
			plural(res.ContextsDeleted, "context record", "context records"))
	}
	if a.flags.json {
		now, err := a.remoteRecord(ctx, rc, id)
		if err != nil {
			return err
		}
		now.Vector = nil
		return writeJSONIndent(a.io.Out, &now)
	}
	return a.printWritten(res.written())
}
