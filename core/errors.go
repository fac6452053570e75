package core

import (
	"errors"
	"fmt"
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

// ErrConfig is matched by every *ConfigError with errors.Is.
var ErrConfig = errors.New("core: invalid configuration")

// ConfigError reports invalid configuration, naming the field.
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

// Unwrap lets errors.Is(err, ErrConfig) match.
func (e *ConfigError) Unwrap() error { return ErrConfig }

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
	Hook  string
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

// WriteError is what a layer's hook returns for a record its store did not
// confirm. The runtime hands it to the caller of Append, Record or
// Complete (inside a *HookError naming the layer and hook) instead of only
// diagnosing it: acknowledged means stored.
type WriteError struct {
	// Layer is the layer whose write failed.
	Layer string
	// Item names what was not stored: a record id, an item id or a short
	// description ("episode of run r1").
	Item string
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

// ErrThreadBound is matched by every *ThreadBoundError.
var ErrThreadBound = errors.New("core: thread belongs to another resource")

// ThreadBoundError refuses a run on a thread that belongs to another
// resource. A thread id is bound to the resource of the first run that
// used it (or to none, when that run had no ResourceID); a run naming it
// with another resource, or without one, would otherwise read or write
// memory that is not its own.
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

// Unwrap lets errors.Is(err, ErrThreadBound) match.
func (e *ThreadBoundError) Unwrap() error { return ErrThreadBound }
