package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
)

// The runtime keeps, beside the records, a state store: the layers' state
// (a todo list, the temporal layer's call-id replay protection), the
// binding of each thread to its resource and the recorded assemblies that
// memctl inspect shows. export, import and migrate move every key of it
// with the records, values byte for byte (environment.CopyState), so a
// move between backends is lossless; a filter that selects records selects
// no state, since what of the state belongs to a subset of the records is
// the layers' to say.

// stateFlags are the state options of export, import and migrate.
type stateFlags struct {
	noState, noAssemblies bool
}

func (f *stateFlags) registerState(fs interface {
	BoolVar(p *bool, name string, value bool, usage string)
}, verb string) {
	fs.BoolVar(&f.noState, "no-state", false, verb+" the records only, not the runtime's layer state and recorded assemblies")
	fs.BoolVar(&f.noAssemblies, "no-assemblies", false, verb+" the layer state but not the recorded assemblies (memctl inspect's)")
}

// include is the key selection of the flags.
func (f *stateFlags) include() func(storage.Key) bool {
	if !f.noAssemblies {
		return nil
	}
	return func(k storage.Key) bool { return !inspect.IsAssemblyKey(k) }
}

// openedState is a state store memctl uses beside a record store.
type openedState struct {
	st   storage.Store
	name string
	own  bool // opened here: closed by close
}

func (o *openedState) close() {
	if o != nil && o.own && o.st != nil {
		_ = o.st.Close()
	}
}

// stateOf opens the state store at loc kept with the record store s: the
// one s's environment has open when loc is its own (an embedded
// directory's <dir>/state), else loc opened. create makes a missing
// filestore directory (an import or migrate target). loc "" is no state
// store known: nil.
func (a *app) stateOf(ctx context.Context, s *store, loc string, create bool) (*openedState, error) {
	if loc == "" {
		return nil, nil
	}
	if s != nil && s.envx != nil && s.envx.State != nil && s.ref.Dir != "" && loc == filepath.Join(s.ref.Dir, "state") {
		return &openedState{st: s.envx.State, name: loc}, nil
	}
	if create && !isPostgres(loc) {
		octx, cancel := context.WithTimeout(ctx, a.flags.timeout)
		defer cancel()
		st, err := storage.Open(octx, loc)
		if err != nil {
			return nil, fmt.Errorf("open state store %s: %w", loc, err)
		}
		return &openedState{st: st, name: loc, own: true}, nil
	}
	st, name, err := a.openStateAt(ctx, loc)
	if err != nil {
		return nil, err
	}
	return &openedState{st: st, name: name, own: true}, nil
}

func isPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// defaultStateLoc is where the runtime keeps the state of the store ref
// when nothing names another place: <dir>/state of an embedded directory,
// the database of a postgres store, "" for the others.
func defaultStateLoc(ref storeRef) string {
	switch {
	case ref.Dir != "":
		return filepath.Join(ref.Dir, "state")
	case ref.Scheme == "postgres":
		return ref.URL
	}
	return ""
}

// stateResult is the state part of what export, import and migrate
// report.
type stateResult struct {
	Keys       int `json:"keys"`
	Assemblies int `json:"assemblies"`
	Written    int `json:"written"`
	Skipped    int `json:"skipped"`
	Verified   int `json:"verified"`
}

// verifyState checks that dst holds every selected key of src as src
// does, and words the first mismatches.
func verifyState(ctx context.Context, src, dst *openedState, include func(storage.Key) bool, res *stateResult) error {
	n, ok, bad, err := environment.VerifyState(ctx, src.st, dst.st, environment.StateCopyOptions{Include: include})
	if err != nil {
		return err
	}
	res.Verified = ok
	if ok == n {
		return nil
	}
	var names []string
	for _, m := range bad {
		what := "differs"
		if m.Missing {
			what = "missing"
		}
		names = append(names, fmt.Sprintf("%s (%s)", m.Key, what))
	}
	return fmt.Errorf("%w: %d of %d state keys of %s are not in %s as they are in the source: %s",
		ErrVerify, n-ok, n, src.name, dst.name, strings.Join(names, ", "))
}
