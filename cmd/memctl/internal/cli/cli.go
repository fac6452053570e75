package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stratamem/strata/cmd/memctl/internal/progress"
)

// IO is where a memctl invocation reads and writes.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

type globalFlags struct {
	store, embedder, config, state string
	server                         string
	timeout                        time.Duration
	json, noProgress, wide         bool
}

// app is one invocation's state.
type app struct {
	io      IO
	flags   globalFlags
	cfg     fileConfig
	cfgPath string
	now     func() time.Time
}

// Main runs memctl with args (without the program name) and returns the
// exit status. It never panics on bad input; a panic in a dependency is
// reported as one line, exit status 1.
func Main(ctx context.Context, args []string, stdio IO) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stdio.Err, "memctl: internal error: %s\n", esc(oneLine(fmt.Sprint(r))))
			code = ExitError
		}
	}()
	a := &app{io: stdio, now: time.Now}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	msg := Message(err)
	if errors.Is(err, ErrUsage) {
		msg += " (see '" + cmd.CommandPath() + " --help')"
	}
	// The message may quote what the store holds: escaped, as every
	// human-readable line is.
	fmt.Fprintln(stdio.Err, "memctl: "+esc(msg))
	return ExitCode(err)
}

const rootLong = `memctl lists, searches, edits, deletes, exports, re-embeds and migrates the
memories strata's layers store (episodic, semantic, entity, observations,
temporal, scratchpad), on any backend: the embedded default directory,
PostgreSQL with pgvector, or Qdrant.

The store is one value, taken from --store, else $STRATA_STORE, else the
config file ($XDG_CONFIG_HOME/strata/memctl.json: {"store": "...",
"embedder": "..."}), else ./.strata/data:

  ./.strata/data                             an embedded directory (default)
  postgres://user@host:5432/db?collection=memories
  qdrant://localhost:6334?collection=memories
  chromem:///abs/dir?collection=memories     a bare chromem collection

The embedder (for search, add, edit, import of records without vectors) is
--embedder, else $STRATA_EMBEDDER, else the config file, else the one an
embedded store records in strata.json, else the default model:
  uselite | hash:DIM | openai:MODEL[?dimensions=N] | ollama:MODEL

Beside the records, the runtime keeps a state store: the layers' state, the
bindings of threads to resources and the recorded assemblies (memctl state
lists and edits it; export, import and migrate carry it with the records).
It is --state, else the config file's "state", else <dir>/state of an
embedded directory, else the database of a postgres store.

While an agent has an embedded directory open, the read commands read a
snapshot of its records (and its state store in place); the commands that
write fail, naming the process that holds it.

Output is a table fitting 80 columns by default (--wide, -w, shows every
column whole); --json prints JSON with snake_case keys (one object per line
for ls and search). Long operations show progress when stderr is a terminal.
Memories are written by models, so every human-readable line (tables, show,
inspect, stats, dry runs, prompts, errors) prints the control characters
they hold as visible escapes (\x1b, \r, \u009b, \u202e...): nothing a
memory holds can drive the terminal. --json and export write the text
exactly (JSON escapes, no raw control).

` + exitCodesHelp

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "memctl",
		Short:         "Manage the memories strata's agents store",
		Long:          rootLong,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				hint := ""
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = "; did you mean " + strings.Join(s, " or ") + "?"
				}
				return usageErrorf("unknown command %q%s", args[0], hint)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.setup(cmd)
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v", err)
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.flags.store, "store", "", "store: a directory, postgres://..., qdrant://host:port or chromem:///dir (default $"+EnvStore+", the config file, ./.strata/data)")
	pf.StringVar(&a.flags.embedder, "embedder", "", "embedder: uselite, hash:DIM, openai:MODEL, ollama:MODEL (default $"+EnvEmbedder+", the config file, the store's recorded one, uselite)")
	pf.StringVar(&a.flags.config, "config", "", "config file (default $"+EnvConfig+" or $XDG_CONFIG_HOME/strata/memctl.json)")
	pf.StringVar(&a.flags.server, "server", "", "run the command through a strata server (strata serve) at this http(s) URL, with the API key $"+EnvAPIKey+": ls, show, search, add, edit, rm ID, stats, export, state and inspect (not import, migrate, reindex, salvage, bench: they need the store's files or engine)")
	pf.StringVar(&a.flags.state, "state", "", "the runtime's state store (layer state, recorded assemblies): a filestore directory or postgres:// URL (default: the config file's, <dir>/state of an embedded store, the postgres store's database)")
	pf.DurationVar(&a.flags.timeout, "timeout", 30*time.Second, "how long to wait for the store to open or connect")
	pf.BoolVar(&a.flags.json, "json", false, "print JSON (one object per line for lists) instead of a table")
	pf.BoolVar(&a.flags.noProgress, "no-progress", false, "never draw progress (it is drawn only when stderr is a terminal)")
	pf.BoolVarP(&a.flags.wide, "wide", "w", false, "tables as wide as their contents: every column, nothing shortened (default: fit the terminal, at least 80 columns; 80 when piped)")
	_ = root.RegisterFlagCompletionFunc("embedder", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"uselite\tthe offline default model", "hash:64\tdeterministic hashing (tests)", "openai:\tOpenAI-compatible API", "ollama:\tOllama"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})

	root.AddCommand(a.lsCmd(), a.showCmd(), a.searchCmd(), a.addCmd(), a.editCmd(), a.rmCmd(),
		a.exportCmd(), a.importCmd(), a.statsCmd(), a.reindexCmd(), a.migrateCmd(), a.inspectCmd(), a.benchCmd(), a.salvageCmd(),
		a.stateCmd(), a.versionCmd())
	for _, c := range root.Commands() {
		if c.Long != "" {
			c.Long += "\n\n" + exitCodesHelp
		}
	}
	return root
}

// setup reads the config file once flags are parsed.
func (a *app) setup(cmd *cobra.Command) error {
	if a.flags.timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	a.cfgPath = configPath(a.flags.config)
	explicit := a.flags.config != "" || os.Getenv(EnvConfig) != ""
	cfg, err := loadConfig(a.cfgPath, explicit)
	if err != nil {
		return err
	}
	a.cfg = cfg
	if a.flags.server != "" {
		if _, err := a.remoteClient(); err != nil {
			return err
		}
		switch name := cmd.CommandPath(); name {
		case "memctl ls", "memctl show", "memctl search", "memctl rm", "memctl inspect", "memctl version",
			"memctl add", "memctl edit", "memctl stats", "memctl export",
			"memctl state", "memctl state ls", "memctl state show", "memctl state edit", "memctl state rm":
		default:
			if !strings.HasPrefix(name, "memctl completion") && !strings.HasPrefix(name, "memctl help") && !strings.HasPrefix(name, "memctl __complete") {
				return a.serverOnly(strings.TrimPrefix(name, "memctl "))
			}
		}
		if a.flags.store != "" {
			return usageErrorf("--server and --store exclude each other: the server opens the store")
		}
	}
	return nil
}

// width is the width tables fit: the terminal's when the output is a
// terminal wider than 80 columns, else 80; none with --wide. Piped output
// keeps 80 columns, so what scripts see does not depend on the window.
func (a *app) width() int {
	if a.flags.wide {
		return 0
	}
	if f, ok := a.io.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > tableWidth {
			return w
		}
	}
	return tableWidth
}

// progressOn reports whether progress is drawn: stderr is a terminal and
// --no-progress is off.
func (a *app) progressOn() bool {
	return !a.flags.noProgress && progress.IsTerminal(a.io.Err)
}

// terminalIn is stdin when it is a terminal to ask the operator on.
func (a *app) terminalIn() (*os.File, bool) {
	in, ok := a.io.In.(*os.File)
	return in, ok && progress.IsTerminal(in)
}

// confirm asks question (escaped already) on a terminal and returns nil
// for yes; elsewhere it returns refused.
func (a *app) confirm(question string, refused error, aborted string) error {
	in, ok := a.terminalIn()
	if !ok {
		return refused
	}
	fmt.Fprintf(a.io.Err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%w: %s", ErrAborted, aborted)
}

func (a *app) bar(label string, total int64, unit string) *progress.Bar {
	return progress.New(a.io.Err, label, total, a.progressOn(), progress.Options{Unit: unit})
}

// exactArgs is cobra.ExactArgs with a usage error naming the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s, got %d argument(s)", cmd.Name(), names, len(args))
		}
		return nil
	}
}

// fileArg is the optional FILE argument of a command: "-" (stdin or
// stdout) when it is not given.
func fileArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return "-"
}

func rangeArgs(lo, hi int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErrorf("%s takes %s, got %d argument(s)", cmd.Name(), names, len(args))
		}
		return nil
	}
}

// completeIDs completes record ids from the store (the first 1000 that
// match the prefix).
func (a *app) completeIDs(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if err := a.setup(cmd); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx := cmd.Context()
	s, err := a.openStore(ctx, openReadOnly, nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	defer s.Close()
	var out []string
	n := 0
	for r, err := range s.coll.All(ctx, listOpts(1000)) {
		if err != nil || n > 100000 {
			break
		}
		n++
		// An id holding a control is not offered: the shell would print
		// it raw, and its escaped form names no record.
		if strings.HasPrefix(r.ID, prefix) && esc(r.ID) == r.ID {
			out = append(out, r.ID+"\t"+clip(r.Layer+" "+r.Text, 40))
			if len(out) >= 1000 {
				break
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func flagChanged(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}
