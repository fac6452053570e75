package recallbench

import "errors"

var (
	// ErrInvalidConfig is wrapped by errors for a Config or option that
	// cannot run: an unknown backend or dataset, a size out of range, a
	// backend selected without its address.
	ErrInvalidConfig = errors.New("recallbench: invalid configuration")
	// ErrNotEnoughText is wrapped when the real-text corpus has fewer
	// sentences than the run needs.
	ErrNotEnoughText = errors.New("recallbench: not enough text")
	// ErrBackend is wrapped by errors of a backend during a run (open,
	// ingest, query), with the backend's own error kept in the chain.
	ErrBackend = errors.New("recallbench: backend failed")
)
