package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/stratamem/strata/cmd/memctl/internal/cli"
)

func main() {
	// Ctrl-C cancels the context: long operations stop between batches,
	// leaving what they wrote consistent and resumable.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
