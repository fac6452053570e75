package driver

import (
	"errors"
	"fmt"
)

// Code classifies an [Error]. Codes are stable strings so they can be logged,
// compared across processes and shown by memctl.
type Code string

// The error codes of the vectorstore packages.
const (
	CodeNotFound           Code = "NOT_FOUND"
	CodeDimensionMismatch  Code = "DIMENSION_MISMATCH"
	CodeInvalidVector      Code = "INVALID_VECTOR"
	CodeInvalidRecord      Code = "INVALID_RECORD"
	CodeInvalidFilter      Code = "INVALID_FILTER"
	CodeUnknownFilterField Code = "UNKNOWN_FILTER_FIELD"
	CodeInvalidArgument    Code = "INVALID_ARGUMENT"
	CodeConfigMismatch     Code = "CONFIG_MISMATCH"
	CodeClosed             Code = "CLOSED"
	CodeUnsupportedScheme  Code = "UNSUPPORTED_SCHEME"
	CodeCorrupt            Code = "CORRUPT"
	// CodeConflict: a conditional write (UpsertIf, DeleteIf) found another
	// revision than the one it expected, and wrote nothing.
	CodeConflict Code = "CONFLICT"
	// CodeBusy: the collection is held by another process or handle (the
	// embedded store is single-process); the error says who holds it.
	CodeBusy Code = "BUSY"
)

// Sentinel errors, one per [Code]. Every *Error unwraps to the sentinel of
// its code, so errors.Is(err, ErrNotFound) works on any error a collection
// returns, however deeply it was wrapped.
var (
	ErrNotFound           = errors.New("vectorstore: not found")
	ErrDimensionMismatch  = errors.New("vectorstore: dimension mismatch")
	ErrInvalidVector      = errors.New("vectorstore: invalid vector")
	ErrInvalidRecord      = errors.New("vectorstore: invalid record")
	ErrInvalidFilter      = errors.New("vectorstore: invalid filter")
	ErrUnknownFilterField = errors.New("vectorstore: unknown filter field")
	ErrInvalidArgument    = errors.New("vectorstore: invalid argument")
	ErrConfigMismatch     = errors.New("vectorstore: collection config mismatch")
	ErrClosed             = errors.New("vectorstore: collection closed")
	ErrUnsupportedScheme  = errors.New("vectorstore: unsupported URL scheme")
	ErrCorrupt            = errors.New("vectorstore: corrupt data")
	ErrConflict           = errors.New("vectorstore: revision conflict")
	ErrBusy               = errors.New("vectorstore: collection busy (open elsewhere)")
)

var sentinels = map[Code]error{
	CodeNotFound:           ErrNotFound,
	CodeDimensionMismatch:  ErrDimensionMismatch,
	CodeInvalidVector:      ErrInvalidVector,
	CodeInvalidRecord:      ErrInvalidRecord,
	CodeInvalidFilter:      ErrInvalidFilter,
	CodeUnknownFilterField: ErrUnknownFilterField,
	CodeInvalidArgument:    ErrInvalidArgument,
	CodeConfigMismatch:     ErrConfigMismatch,
	CodeClosed:             ErrClosed,
	CodeUnsupportedScheme:  ErrUnsupportedScheme,
	CodeCorrupt:            ErrCorrupt,
	CodeConflict:           ErrConflict,
	CodeBusy:               ErrBusy,
}

// Error is the typed error of the vectorstore packages. Use errors.As to read
// its fields, or errors.Is with the sentinel of its code.
type Error struct {
	Code  Code   // what went wrong
	Op    string // the operation, e.g. "upsert"
	ID    string // the record id involved, if any
	Field string // the offending field, e.g. "vector" or "metadata.lang"
	Msg   string // human detail
	Err   error  // underlying cause, if any
}

// Errorf builds an *Error with a formatted message. Drivers use it for their
// own typed failures (for example CodeConfigMismatch on open).
func Errorf(code Code, op, field, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Conflict is the CodeConflict error of a conditional write of id that
// expected revision expected (0: no record) and found actual (0: no record;
// negative: unknown, or changed while the write was checked).
func Conflict(op, id string, expected, actual int64) *Error {
	want := fmt.Sprintf("revision %d", expected)
	if expected == 0 {
		want = "no record"
	}
	var got string
	switch {
	case actual == 0:
		got = "no record"
	case actual < 0 || actual == expected:
		got = "another revision"
	default:
		got = fmt.Sprintf("revision %d", actual)
	}
	return &Error{Code: CodeConflict, Op: op, ID: id, Field: "revision", Msg: "expected " + want + ", found " + got}
}

func (e *Error) Error() string {
	s := "vectorstore"
	if e.Op != "" {
		s += " " + e.Op
	}
	s += ": " + string(e.Code)
	if e.ID != "" {
		s += fmt.Sprintf(" (id %q)", e.ID)
	}
	if e.Field != "" {
		s += " [" + e.Field + "]"
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel of the error's code and the underlying cause,
// so both errors.Is(err, ErrX) and errors.Is(err, context.Canceled) work.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	if s, ok := sentinels[e.Code]; ok {
		out = append(out, s)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// CodeOf returns the code of the first *Error in err's chain, or "" if none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
