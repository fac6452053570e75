package cachebench

import "errors"

// Sentinel errors; every error of the package that is about its input wraps
// one of them, so test with errors.Is.
var (
	// ErrUnknownWorkload: no workload has the requested name.
	ErrUnknownWorkload = errors.New("cachebench: unknown workload")
	// ErrUnknownStrategy: a strategy or provider name is not one of the
	// package's constants.
	ErrUnknownStrategy = errors.New("cachebench: unknown strategy or provider")
	// ErrInvalidOptions: a negative turn count, a workload without a script,
	// or turns beyond the workload's script.
	ErrInvalidOptions = errors.New("cachebench: invalid options")
	// ErrUnavailable: a strategy needs a part of strata this build lacks.
	ErrUnavailable = errors.New("cachebench: strategy unavailable in this build")
)
