package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

// editable is the part of a record edit changes: id, created_at and the
// vector are not editable (the vector follows the text).
type editable struct {
	Layer     string            `json:"layer"`
	Kind      string            `json:"kind"`
	Scope     vectorstore.Scope `json:"scope"`
	Text      string            `json:"text"`
	Metadata  map[string]string `json:"metadata"`
	ValidFrom *time.Time        `json:"valid_from"`
	ValidTo   *time.Time        `json:"valid_to"`
}

type editFlags struct {
	text, kind, thread, resource, validFrom, validTo, layerType, file string
	meta, unset                                                       []string
}

func (a *app) editCmd() *cobra.Command {
	var f editFlags
	cmd := &cobra.Command{
		Use:   "edit ID",
		Short: "Change a memory, validated as its layer validates it",
		Long: `Change one memory. With flags, change those fields:

  memctl edit ID --text "User is vegan"            (re-embedded)
  memctl edit ID --meta importance=5 --unset-meta origin
  memctl edit ID --valid-to 2026-05-01              (close a temporal fact)

With --file F (or - for stdin), replace the editable fields (layer, kind,
scope, text, metadata, valid_from, valid_to) with the JSON object F holds.
With no flags on a terminal, open $VISUAL or $EDITOR on that JSON, as
kubectl edit does.

The id, creation time and vector are kept; a changed text is re-embedded
with the store's embedder. The result is checked against the layer's rules
(see memctl add --help); derived parts are kept in step: an entity's or
scratchpad note's text prefix, a temporal fact's text and chain keys (edit a
fact's value with --meta value=...). Changing a semantic message's text (or
moving it) deletes the context records that quote it, its own and its
neighbours' in the thread; the layer writes them again from the new text.

With --server, the record is read through the server, changed here (flags,
--file or $EDITOR as above) and written back with a PUT /v1/memories/ID at
the revision read: the server re-embeds a changed text, keeps the context
records in step and refuses the write (exit status 1, nothing written) when
the record changed meanwhile, or when it would leave the key's resources.`,
		Args:              exactArgs(1, "one ID"),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runEdit(cmd.Context(), cmd, args[0], &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.text, "text", "", "new text (- for stdin)")
	fs.StringVarP(&f.kind, "kind", "k", "", "new kind")
	fs.StringVarP(&f.thread, "thread", "t", "", "new thread (\"\" to clear)")
	fs.StringVarP(&f.resource, "resource", "r", "", "new resource (\"\" to clear)")
	fs.StringArrayVar(&f.meta, "meta", nil, "set metadata KEY=VALUE (repeatable)")
	fs.StringArrayVar(&f.unset, "unset-meta", nil, "remove metadata KEY (repeatable)")
	fs.StringVar(&f.validFrom, "valid-from", "", "new start of validity (none to clear)")
	fs.StringVar(&f.validTo, "valid-to", "", "new end of validity (none to clear)")
	fs.StringVar(&f.layerType, "layer-type", "", "the rules of a custom layer id")
	fs.StringVarP(&f.file, "file", "f", "", "replace the editable fields with this JSON (- for stdin)")
	_ = cmd.RegisterFlagCompletionFunc("kind", completeKinds)
	_ = cmd.RegisterFlagCompletionFunc("layer-type", completeLayers)
	return cmd
}

func (a *app) runEdit(ctx context.Context, cmd *cobra.Command, id string, f *editFlags) error {
	if err := checkID(id); err != nil {
		return err
	}
	changed := false
	for _, n := range []string{"text", "kind", "thread", "resource", "meta", "unset-meta", "valid-from", "valid-to"} {
		changed = changed || cmd.Flags().Changed(n)
	}
	if changed && f.file != "" {
		return usageErrorf("--file replaces the record: give no other changes with it")
	}
	now := a.now().UTC()
	// Parse everything before touching the store.
	var vf, vt *time.Time
	for _, p := range []struct {
		name, val string
		dst       **time.Time
	}{{"valid-from", f.validFrom, &vf}, {"valid-to", f.validTo, &vt}} {
		if !cmd.Flags().Changed(p.name) {
			continue
		}
		t := time.Time{}
		if p.val != "none" && p.val != "" {
			var err error
			if t, err = parseTimeFlag("--"+p.name, p.val, now); err != nil {
				return err
			}
		}
		*p.dst = &t
	}
	set, err := parseMeta(f.meta)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("text") {
		t, err := a.readText(f.text)
		if err != nil {
			return err
		}
		f.text = t
	}
	ch := editChanges{changed: changed, set: set, vf: vf, vt: vt}
	if rc, err := a.remoteClient(); err != nil {
		return err
	} else if rc != nil {
		return a.remoteEdit(ctx, rc, cmd, id, f, ch)
	}
	s, old, err := a.openRecord(ctx, id, openRead)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }() // the store open last
	r := old.Clone()
	// The store is closed while the operator edits: an embedded
	// directory is held by one process at a time, and an agent must not
	// be kept from starting by an editor left open. The write below is a
	// compare-and-swap at the revision read, so whatever was written
	// meanwhile is not overwritten.
	err = a.applyEdit(cmd, f, ch, &old, &r, func() error { return s.Close() })
	if err != nil {
		return err
	}
	if !ch.changed && f.file == "" {
		if s, err = a.openStore(ctx, openRead, nil); err != nil {
			return err
		}
	}
	typ := f.layerType
	if typ == "" {
		typ = r.Layer
	}
	format, ok := formatOf(typ)
	if !ok {
		return usageErrorf("layer %q has no rules memctl knows: pass --layer-type (one of %s)", r.Layer, layerTypes())
	}
	format.Prepare(&r, &old)
	if err := format.Validate(&r); err != nil {
		return err
	}
	action := "updated"
	if r.Text != old.Text {
		emb, err := s.embedder(ctx)
		if err != nil {
			return err
		}
		vs, err := emb.Embed(ctx, []string{r.Text})
		if err != nil {
			return fmt.Errorf("embed: %w", err)
		}
		r.Vector = vs[0]
		if _, ok := r.Metadata[semantic.MetaEmbedding]; ok {
			r.Metadata[semantic.MetaEmbedding] = emb.Model()
		}
		action = "updated, re-embedded"
	}
	if len(r.Metadata) == 0 {
		r.Metadata = nil
	}
	if recordsEqual(&old, &r) {
		action = "unchanged"
	} else {
		// A semantic message's old text is quoted by its own and its
		// neighbours' context records: they go first (the layer writes
		// them again from the new text), so a failure in between leaves
		// no copy of the old text behind the message.
		var ctxs []vectorstore.Record
		if environment.IsSemanticMessage(&old) && (r.Text != old.Text || r.Layer != old.Layer || r.Kind != old.Kind || r.Scope != old.Scope) {
			if ctxs, err = environment.QuotingContexts(ctx, s.coll, []vectorstore.Record{old}, nil); err != nil {
				return err
			}
			if err := s.coll.Delete(ctx, idsOf(ctxs)...); err != nil {
				return fmt.Errorf("delete the context records quoting the old text: %w", err)
			}
		}
		// A compare-and-swap: a session (or another memctl) that wrote
		// the record since it was read keeps its write.
		if _, err := s.coll.UpsertIf(ctx, r, old.Revision); errors.Is(err, vectorstore.ErrConflict) {
			return fmt.Errorf("memory %s changed in %s while it was edited: nothing written; run memctl edit again: %w", r.ID, s.ref, err)
		} else if err != nil {
			return err
		}
		if environment.IsSemanticMessage(&old) {
			if err := environment.ReindexThreads(ctx, s.coll, []vectorstore.Record{old, r}); err != nil {
				return err
			}
		}
		if len(ctxs) > 0 {
			fmt.Fprintf(a.io.Err, "memctl: deleted %s of the semantic layer that quoted the old message; the layer writes them again\n",
				plural(len(ctxs), "context record", "context records"))
		}
	}
	if a.flags.json {
		r.Vector = nil
		return writeJSONIndent(a.io.Out, &r)
	}
	return a.printWritten([]written{{ID: r.ID, Layer: r.Layer, Kind: r.Kind, Action: action, Text: r.Text}})
}

func editableOf(r *vectorstore.Record) editable {
	e := editable{Layer: r.Layer, Kind: r.Kind, Scope: r.Scope, Text: r.Text, Metadata: r.Metadata}
	if !r.ValidFrom.IsZero() {
		t := r.ValidFrom
		e.ValidFrom = &t
	}
	if !r.ValidTo.IsZero() {
		t := r.ValidTo
		e.ValidTo = &t
	}
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	return e
}

func (e *editable) apply(r *vectorstore.Record) {
	r.Layer, r.Kind, r.Scope, r.Text = e.Layer, e.Kind, e.Scope, e.Text
	r.Metadata = map[string]string{}
	for k, v := range e.Metadata {
		r.Metadata[k] = v
	}
	r.ValidFrom, r.ValidTo = time.Time{}, time.Time{}
	if e.ValidFrom != nil {
		r.ValidFrom = e.ValidFrom.UTC()
	}
	if e.ValidTo != nil {
		r.ValidTo = e.ValidTo.UTC()
	}
}

func decodeEditable(raw []byte, from string) (editable, error) {
	var e editable
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, usageErrorf("%s: not a record's editable fields (layer, kind, scope, text, metadata, valid_from, valid_to): %v", from, err)
	}
	return e, nil
}

func (a *app) readEditable(path string) (editable, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(a.io.In, 4<<20))
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return editable{}, fmt.Errorf("read %s: %w", path, err)
	}
	return decodeEditable(raw, path)
}

// editInEditor opens $VISUAL or $EDITOR on the record's editable fields.
func (a *app) editInEditor(r *vectorstore.Record) (editable, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if _, ok := a.terminalIn(); editor == "" || !ok {
		return editable{}, usageErrorf("nothing to change: give --text, --meta, --valid-to... or --file (an editor opens only on a terminal with $EDITOR set)")
	}
	e := editableOf(r)
	raw, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return editable{}, err
	}
	dir, err := os.MkdirTemp("", "memctl-edit-")
	if err != nil {
		return editable{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memory.json")
	if err := os.WriteFile(path, append(raw, '\n'), 0o600); err != nil {
		return editable{}, err
	}
	parts := strings.Fields(editor)
	c := exec.Command(parts[0], append(parts[1:], path)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		return editable{}, fmt.Errorf("editor %s: %w", parts[0], err)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return editable{}, err
	}
	return decodeEditable(edited, "the edited file")
}

// editChanges are the parsed change flags of edit.
type editChanges struct {
	changed bool
	set     map[string]string
	vf, vt  *time.Time
}

// applyEdit makes the edit the flags ask for on r, a clone of old: the
// --file's fields, the flags' changes, or, with neither, what the
// operator writes in $EDITOR (beforeEditor runs first, to let go of the
// store while the editor is open).
func (a *app) applyEdit(cmd *cobra.Command, f *editFlags, ch editChanges, old, r *vectorstore.Record, beforeEditor func() error) error {
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	switch {
	case f.file != "":
		e, err := a.readEditable(f.file)
		if err != nil {
			return err
		}
		e.apply(r)
	case ch.changed:
		if cmd.Flags().Changed("text") {
			r.Text = f.text
		}
		if cmd.Flags().Changed("kind") {
			r.Kind = f.kind
		}
		if cmd.Flags().Changed("thread") {
			r.Scope.Thread = f.thread
		}
		if cmd.Flags().Changed("resource") {
			r.Scope.Resource = f.resource
		}
		for k, v := range ch.set {
			r.Metadata[k] = v
		}
		for _, k := range f.unset {
			delete(r.Metadata, k)
		}
		if ch.vf != nil {
			r.ValidFrom = *ch.vf
		}
		if ch.vt != nil {
			r.ValidTo = *ch.vt
		}
	default:
		if beforeEditor != nil {
			if err := beforeEditor(); err != nil {
				return err
			}
		}
		e, err := a.editInEditor(old)
		if err != nil {
			return err
		}
		e.apply(r)
	}
	return nil
}
