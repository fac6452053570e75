package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/uselite"
	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/vectorstore"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitError    = 1 // a runtime failure: store unreachable, bad data, ...
	ExitUsage    = 2 // bad flags, arguments or input on the command line
	ExitNotFound = 3 // the record, thread or store asked for does not exist
)

const exitCodesHelp = `Exit status: 0 ok, 1 runtime error (unreachable store, bad data), 2 usage error
(unknown flag, malformed id or argument), 3 not found.`

// Sentinel errors of memctl, matched with errors.Is.
var (
	// ErrUsage marks errors in the command line; exit status 2.
	ErrUsage = errors.New("usage")
	// ErrNotFound marks a missing record, thread or store; exit status 3.
	ErrNotFound = errors.New("not found")
	// ErrNoStore is wrapped when the store to read does not exist.
	ErrNoStore = errors.New("no store")
	// ErrAborted is wrapped when the operator declined a confirmation.
	ErrAborted = errors.New("aborted")
	// ErrVerify is wrapped when a copy does not verify.
	ErrVerify = errors.New("verification failed")
	// ErrDistance is wrapped when the vectors to write use another distance
	// than the target store: exit status 1, nothing is written.
	ErrDistance = errors.New("distance mismatch")
	// ErrBadLines is wrapped when an import skipped lines.
	ErrBadLines = errors.New("bad lines")
	// ErrDuplicateID is wrapped when an import's input holds one id on two
	// lines (and --last-wins is off): exit status 1, nothing is written.
	ErrDuplicateID = errors.New("duplicate id")
	// ErrStateStore is wrapped when rm cannot list or delete the runtime's
	// layer state: exit status 1, even when the cause is a state directory
	// that does not exist, since rm then deleted nothing it was asked to.
	ErrStateStore = errors.New("state store failed")
	// ErrLocked is wrapped when an embedded store is held by another
	// process and the command would write to it: exit status 1.
	ErrLocked = errors.New("store locked")
)

// usageErrorf returns an error wrapping ErrUsage.
func usageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

// notFoundf returns an error wrapping ErrNotFound.
func notFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotFound}, args...)...)
}

// ExitCode maps an error to memctl's exit status.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrStateStore):
		return ExitError
	case errors.Is(err, ErrUsage), errors.Is(err, memory.ErrInvalidRecord), errors.Is(err, embed.ErrInvalidSpec):
		return ExitUsage
	case errors.Is(err, ErrNotFound), errors.Is(err, vectorstore.ErrNotFound), errors.Is(err, ErrNoStore):
		return ExitNotFound
	}
	return ExitError
}

// Message renders err as the one line memctl prints: sentinel prefixes
// that only classify are dropped, newlines folded, and a hint added for
// the failures an operator can act on.
func Message(err error) string {
	msg := err.Error()
	// Only where a sentinel stands as a prefix of its own (at the start or
	// after another prefix): "uselite: model not found: ..." keeps its
	// words.
	for _, p := range []string{ErrUsage.Error() + ": ", ErrNotFound.Error() + ": "} {
		msg = strings.TrimPrefix(msg, p)
		msg = strings.ReplaceAll(msg, ": "+p, ": ")
	}
	switch {
	case errors.Is(err, context.Canceled):
		msg += " (interrupted)"
	case errors.Is(err, embedded.ErrEmbedderMismatch), errors.Is(err, embed.ErrMismatch):
		if !strings.Contains(msg, "reindex") {
			msg += " (pass the store's --embedder, or run memctl reindex)"
		}
	case errors.Is(err, uselite.ErrModelNotFound):
		msg += " (or pass --embedder hash:DIM, openai:MODEL or ollama:MODEL)"
	}
	return oneLine(msg)
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	parts := strings.Split(s, "\n")
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
