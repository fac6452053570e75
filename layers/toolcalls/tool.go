package toolcalls

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stratamem/strata/core"
)

// GetState is the typed form of core.ToolContext.Get.
func GetState[S any](tc core.ToolContext, layerID string) (S, bool) {
	v, ok := tc.Get(layerID)
	if !ok {
		var zero S
		return zero, false
	}
	s, ok := v.(S)
	return s, ok
}

// Decl is a tool's type-erased context declaration: the state a set of
// tools shares, rendered by the layer Layers generates for it.
type Decl interface {
	// StateID is the id of the shared layer.
	StateID() string
	// Layer builds the layer that holds and renders the state.
	Layer() core.AnyLayer
}

// ToolState declares context state owned by tools. Tools that name the
// same ID share one layer, so one tool's write is what the others read.
type ToolState[S any] struct {
	// ID of the shared layer; the tool's name when empty (NewTool fills
	// it).
	ID string
	// Init makes the initial state; nil means the zero value.
	Init func() S
	// Recall renders the state into the context; ok=false renders nothing.
	Recall func(state S) (text string, ok bool)
	// Scope defaults to core.ScopeExecution: the state lives for the run. A
	// thread or resource scope shares the state with every run of the
	// thread or resource; their writes are compare-and-swapped, and a
	// tool whose write lost is re-run on the stored state (see
	// core.Session.ExecuteTool).
	Scope core.Scope
	// Slot orders the layer; 0 means core.SlotScratchpad.
	Slot core.Slot
	// Placement of the layer; tool state changes as tools run, so the
	// zero value (auto) lets the runtime learn it.
	Placement core.Placement
}

// StateID implements Decl.
func (d *ToolState[S]) StateID() string { return d.ID }

// Layer implements Decl.
func (d *ToolState[S]) Layer() core.AnyLayer {
	scope := d.Scope
	if scope == "" {
		scope = core.ScopeExecution
	}
	slot := d.Slot
	if slot == 0 {
		slot = core.SlotScratchpad
	}
	l := core.Layer[S]{ID: d.ID, Name: "tool state " + d.ID, Slot: slot, Scope: scope, Placement: d.Placement}
	init := d.Init
	l.Hooks.Init = func(_ context.Context, p core.InitParams) (S, error) {
		var s S
		if len(p.Stored) > 0 {
			err := json.Unmarshal(p.Stored, &s)
			return s, err
		}
		if init != nil {
			s = init()
		}
		return s, nil
	}
	if render := d.Recall; render != nil {
		l.Hooks.Recall = func(_ context.Context, p core.RecallParams[S]) (core.Recall[S], error) {
			text, ok := render(p.State)
			if !ok {
				return core.Recall[S]{}, nil
			}
			return core.Text[S](text)
		}
	}
	return l
}

// ToolDef defines a tool whose arguments decode into In and whose result
// is an Out (a string result is sent as is, anything else as JSON).
type ToolDef[In, Out any] struct {
	Name        string
	Description string
	// State, when set, is the context the tool reads and writes through
	// its core.ToolContext. An empty State.ID takes the tool's name.
	State Decl
	// Execute runs the tool. Its writes (tc.Set) are stored when it
	// returns; when a durable state's write loses the compare-and-swap
	// to another run, Execute is called again on the reloaded state (see
	// core.Session.ExecuteTool), so it must be safe to re-run: compute the
	// writes and the output from the arguments and the state read
	// through tc, and make any effect outside the state idempotent.
	Execute func(ctx context.Context, in In, tc core.ToolContext) (Out, error)
}

type funcTool[In, Out any] struct {
	def      ToolDef[In, Out]
	spec     core.ToolSpec
	resolved *jsonschema.Resolved
}

// NewTool builds a tool from its definition, deriving the JSON schema of
// its arguments from In (struct tags `json` and `jsonschema`).
// Arguments that do not match the input schema are rejected back to the
// model without running the tool.
func NewTool[In, Out any](def ToolDef[In, Out]) (core.Tool, error) {
	if def.Name == "" {
		return nil, &core.ConfigError{Code: core.CodeInvalidLayer, Field: "ToolDef.Name", Reason: "empty"}
	}
	if def.Execute == nil {
		return nil, &core.ConfigError{Code: core.CodeInvalidLayer, Field: "ToolDef.Execute", Reason: "nil"}
	}
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, &core.ConfigError{Code: core.CodeInvalidLayer, Field: "ToolDef.Execute", Reason: fmt.Sprintf("input type: %v", err)}
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		return nil, &core.ConfigError{Code: core.CodeInvalidLayer, Field: "ToolDef.Execute", Reason: fmt.Sprintf("input schema: %v", err)}
	}
	inRaw, _ := json.Marshal(in)
	t := &funcTool[In, Out]{def: def, resolved: resolved,
		spec: core.ToolSpec{Name: def.Name, Description: def.Description, Parameters: inRaw}}
	if ts, ok := def.State.(interface{ setDefaultID(string) }); ok {
		ts.setDefaultID(def.Name)
	}
	return t, nil
}

func (d *ToolState[S]) setDefaultID(id string) {
	if d.ID == "" {
		d.ID = id
	}
}

// MustTool is NewTool for definitions known to be valid; it panics
// otherwise. Use it for package-level tools.
func MustTool[In, Out any](def ToolDef[In, Out]) core.Tool {
	t, err := NewTool(def)
	if err != nil {
		panic(err)
	}
	return t
}

func (t *funcTool[In, Out]) Spec() core.ToolSpec { return t.spec }
func (t *funcTool[In, Out]) State() Decl         { return t.def.State }

func (t *funcTool[In, Out]) Execute(ctx context.Context, tc core.ToolContext, arguments string) (string, error) {
	var instance any
	if err := json.Unmarshal([]byte(orEmptyObject(arguments)), &instance); err != nil {
		return "", &core.ArgumentError{Function: t.spec.Name, Err: err}
	}
	if err := t.resolved.Validate(instance); err != nil {
		return "", &core.ArgumentError{Function: t.spec.Name, Err: err}
	}
	in, err := core.DecodeArguments[In](arguments)
	if err != nil {
		return "", &core.ArgumentError{Function: t.spec.Name, Err: err}
	}
	out, err := t.def.Execute(ctx, in, tc)
	if err != nil {
		return "", err
	}
	if s, ok := any(out).(string); ok {
		return s, nil
	}
	raw, err := marshalNoEscape(out)
	if err != nil {
		return "", fmt.Errorf("encode %s result: %w", t.spec.Name, err)
	}
	return string(raw), nil
}

// StateID implements core.Tool: the id of the tool's state, "" for none.
func (t *funcTool[In, Out]) StateID() string {
	if t.def.State == nil {
		return ""
	}
	return t.def.State.StateID()
}

func orEmptyObject(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// marshalNoEscape encodes v like json.Marshal (maps with sorted keys) but
// leaves <, > and & alone: tool output is read by models, not browsers.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
