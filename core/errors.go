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
