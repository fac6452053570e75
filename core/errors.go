package core

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorCode is a stable code of a configuration error.
type ErrorCode string

// Configuration error codes. They are part of the API: match them with
// errors.As and ConfigError.Code.
const (
	CodeInvalidBudgetInput ErrorCode = "INVALID_BUDGET_INPUT"
	CodeBudgetExceedsPool  ErrorCode = "BUDGET_EXCEEDS_POOL"
	CodeDuplicateLayerID   ErrorCode = "DUPLICATE_LAYER_ID"
	CodeInvalidLayer       ErrorCode = "INVALID_LAYER"
	CodeInvalidPolicy      ErrorCode = "INVALID_POLICY"
	CodeInvalidCacheConfig ErrorCode = "INVALID_CACHE_CONFIG"
	CodeInvalidRun         ErrorCode = "INVALID_RUN"
	CodeDuplicateFunction  ErrorCode = "DUPLICATE_FUNCTION"
)

// ConfigError reports invalid configuration, naming the field. Match it
// with errors.As.
type ConfigError struct {
	Code ErrorCode
	// Layer is the id of the layer at fault, if any.
	Layer string
	// Field names the offending field, e.g. "Budget.Min".
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	where := e.Field
	if e.Layer != "" {
		where = fmt.Sprintf("layer %q: %s", e.Layer, e.Field)
	}
	return fmt.Sprintf("core: %s: %s: %s", e.Code, where, e.Reason)
}

// ErrDisposed is returned by calls on a session after Complete or Close.
var ErrDisposed = errors.New("core: session is disposed")

// ErrUnknownFunction is returned when a call names no provided function.
var ErrUnknownFunction = errors.New("core: unknown function")

// ErrCallDenied is returned by ExecuteTool for a call the layers denied in
// this session (Session.BeforeToolCall answered Allowed false): a denied
// call never runs, even when the host routes it anyway.
var ErrCallDenied = errors.New("core: call denied")

// HookError reports a hook that failed, panicked or timed out. Init
// failures are returned as *HookError; the others are recorded as
// diagnostics.
type HookError struct {
	Layer string
	Hook  Hook
	Kind  DiagnosticKind
	Err   error
}

func (e *HookError) Error() string {
	return fmt.Sprintf("core: layer %q hook %s %s: %v", e.Layer, e.Hook, e.Kind, e.Err)
}

func (e *HookError) Unwrap() error { return e.Err }

// ErrNotStored is matched (errors.Is) by every error that says a write a
// layer's hook made was not confirmed by its store: the store refused it,
// failed, or did not answer before the hook's timeout. A session method
// that returns such an error has not acknowledged the items it was given:
// they are in the run's log, but some layer's memory may not hold them.
// The layers keep what they could not store and retry it at their next
// write (the next Append, Record or Complete); a nil error from a later
// call means everything is stored by then.
var ErrNotStored = errors.New("core: write not confirmed by the store")

// WriteError reports a write its store did not confirm. A layer's hook
// returns one for a record its store refused; the runtime hands it to the
// caller of Append, Record or Complete (inside a *HookError naming the
// layer and hook) instead of only diagnosing it: acknowledged means
// stored. Session.ExecuteTool returns one for a tool whose change to its
// state was not stored: the write lost a compare-and-swap
// (errors.Is(err, storage.ErrConflict)) on every attempt, or failed
// otherwise; the call's output then tells the model the change was not
// applied.
type WriteError struct {
	// Layer is the layer whose write failed: for a tool, the state.
	Layer string
	// Item names what was not stored: a record id, an item id, a short
	// description ("episode of run r1"), or the name of the tool whose
	// state write failed.
	Item string
	// Attempts counts a tool's runs, 1 plus the conflict retries; zero
	// for a layer's write.
	Attempts int
	// Applied lists the states of a tool's last attempt that were stored
	// before the failure (a tool that writes several durable states is
	// not atomic across them); empty when nothing changed.
	Applied []string
	// Err is the store's error; for a hook that timed out, the context's.
	Err error
}

func (e *WriteError) Error() string {
	s := "core: not stored"
	if e.Layer != "" {
		s += fmt.Sprintf(" by layer %q", e.Layer)
	}
	if e.Item != "" {
		s += ": " + e.Item
	}
	if e.Attempts > 0 {
		s += fmt.Sprintf(" after %d attempt(s)", e.Attempts)
	}
	if len(e.Applied) > 0 {
		s += fmt.Sprintf(" (stored: %s)", strings.Join(e.Applied, ", "))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is match ErrNotStored and the store's own error.
func (e *WriteError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrNotStored}
	}
	return []error{ErrNotStored, e.Err}
}

// ThreadBoundError refuses a run on a thread that belongs to another
// resource. A thread id is bound to the resource of the first run that
// used it (or to none, when that run had no ResourceID); a run naming it
// with another resource, or without one, would otherwise read or write
// memory that is not its own. Match it with errors.As.
type ThreadBoundError struct {
	Thread string
	// Bound is the resource the thread belongs to ("" for none).
	Bound string
	// Requested is the resource the refused run named ("" for none).
	Requested string
}

func (e *ThreadBoundError) Error() string {
	name := func(r string) string {
		if r == "" {
			return "no resource"
		}
		return fmt.Sprintf("resource %q", r)
	}
	return fmt.Sprintf("core: thread %q belongs to %s, not %s: use a thread id of its own for each resource",
		e.Thread, name(e.Bound), name(e.Requested))
}
