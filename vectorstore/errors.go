package vectorstore

import "github.com/stratamem/strata/vectorstore/driver"

// Error is the typed error every vectorstore operation returns for bad input
// and known failure modes; read it with errors.As.
type Error = driver.Error

// Code classifies an Error.
type Code = driver.Code

// Error codes (stable strings).
const (
	CodeNotFound           = driver.CodeNotFound
	CodeDimensionMismatch  = driver.CodeDimensionMismatch
	CodeInvalidVector      = driver.CodeInvalidVector
	CodeInvalidRecord      = driver.CodeInvalidRecord
	CodeInvalidFilter      = driver.CodeInvalidFilter
	CodeUnknownFilterField = driver.CodeUnknownFilterField
	CodeInvalidArgument    = driver.CodeInvalidArgument
	CodeConfigMismatch     = driver.CodeConfigMismatch
	CodeClosed             = driver.CodeClosed
	CodeUnsupportedScheme  = driver.CodeUnsupportedScheme
	CodeCorrupt            = driver.CodeCorrupt
	CodeConflict           = driver.CodeConflict
	CodeBusy               = driver.CodeBusy
)

// Sentinels for errors.Is; every *Error unwraps to the one of its code.
var (
	ErrNotFound           = driver.ErrNotFound
	ErrDimensionMismatch  = driver.ErrDimensionMismatch
	ErrInvalidVector      = driver.ErrInvalidVector
	ErrInvalidRecord      = driver.ErrInvalidRecord
	ErrInvalidFilter      = driver.ErrInvalidFilter
	ErrUnknownFilterField = driver.ErrUnknownFilterField
	ErrInvalidArgument    = driver.ErrInvalidArgument
	ErrConfigMismatch     = driver.ErrConfigMismatch
	ErrClosed             = driver.ErrClosed
	ErrUnsupportedScheme  = driver.ErrUnsupportedScheme
	ErrCorrupt            = driver.ErrCorrupt
	// ErrConflict: a conditional write (UpsertIf, DeleteIf) found the
	// record at another revision than expected and wrote nothing.
	ErrConflict = driver.ErrConflict
	// ErrBusy: the collection is open in another process (the embedded
	// store); the error names the holder's pid.
	ErrBusy = driver.ErrBusy
)

// CodeOf returns the Code of the first *Error in err's chain, or "".
func CodeOf(err error) Code { return driver.CodeOf(err) }
