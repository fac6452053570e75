package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/stratamem/strata/vectorstore/pgvector"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stratamem/strata/storage"
	// The state-store drivers storage.Open opens by URL.
	_ "github.com/stratamem/strata/storage/filestore"
	_ "github.com/stratamem/strata/storage/postgres"
)

// connectionURL is a postgres store URL with only its connection
// parameters (those pgvector passes on to pgx): the collection and index
// parameters of the vector store are dropped, so the URL opens the state
// store in the same database.
func connectionURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	for p := range q {
		if !slices.Contains(pgvector.PgxParams(), p) {
			q.Del(p)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (a *app) openState(ctx context.Context) (storage.Store, string, error) {
	ref, err := resolveStore(a.flags.store, a.cfg, a.cfgPath)
	if err != nil {
		return nil, "", err
	}
	loc, err := a.stateRef(ref)
	if err != nil {
		return nil, "", err
	}
	return a.openStateAt(ctx, loc)
}

// openStateAt opens the state store at loc, a filestore directory that
// must exist or a postgres URL (that of the vector store may be given: its
// parameters are ignored), and returns it with a name for messages.
func (a *app) openStateAt(ctx context.Context, loc string) (storage.Store, string, error) {
	octx, cancel := context.WithTimeout(ctx, a.flags.timeout)
	defer cancel()
	name := redactURL(loc)
	if !strings.HasPrefix(loc, "postgres://") && !strings.HasPrefix(loc, "postgresql://") {
		if _, err := os.Stat(loc); errors.Is(err, fs.ErrNotExist) {
			return nil, "", notFoundf("no state store at %s (the runtime keeps recorded assemblies there)", loc)
		}
		name = loc
	}
	st, err := storage.Open(octx, loc)
	if err != nil {
		return nil, "", fmt.Errorf("open state store %s: %w", name, err)
	}
	return st, name, nil
}

// resourceName names a thread's owner in a message.
func resourceName(r string) string {
	if r == "" {
		return "no resource"
	}
	return fmt.Sprintf("resource %q", r)
}

// stateLoc says where the runtime keeps its layer state, for inspect and
// rm: --state, else the config file's state, else <dir>/state of an
// embedded directory, else the postgres store's database; "" when none of
// these applies.
func (a *app) stateLoc(ref storeRef) string {
	switch {
	case a.flags.state != "":
		return a.flags.state
	case a.cfg.State != "":
		return a.cfg.State
	case ref.Dir != "":
		return filepath.Join(ref.Dir, "state")
	case ref.Scheme == "postgres":
		return ref.URL
	}
	return ""
}

// stateRef is stateLoc, with a usage error when it is unknown.
func (a *app) stateRef(ref storeRef) (string, error) {
	if loc := a.stateLoc(ref); loc != "" {
		return loc, nil
	}
	return "", usageErrorf("memctl reads the runtime's state store: %s is not an embedded directory or postgres URL, so pass --state DIR|postgres://...", ref)
}
