package recallbench

import (
	"context"
	"log/slog"
)

// slogFunc is a logger that calls fn with each record's message.
func slogFunc(fn func(msg string)) *slog.Logger { return slog.New(msgHandler(fn)) }

type msgHandler func(string)

func (h msgHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h msgHandler) Handle(_ context.Context, r slog.Record) error {
	h(r.Message)
	return nil
}
func (h msgHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h msgHandler) WithGroup(string) slog.Handler      { return h }
