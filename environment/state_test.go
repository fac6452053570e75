package environment_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
)

// seedState writes state in every scope: layer state, a binding, an
// assembly key, and a value that is not JSON (values are opaque).
func seedState(t *testing.T, st storage.Store, tag string) []storage.Key {
	t.Helper()
	ctx := context.Background()
	vals := map[storage.Key][]byte{
		{Scope: "global", Layer: "todo" + tag, Name: "state"}:                                                []byte(`{"items":["ship"]}`),
		{Scope: "resource", ScopeID: "alice" + tag, Layer: "temporal", Name: "calls"}:                        []byte(`["call-1","call-2"]`),
		{Scope: "thread", ScopeID: storage.ThreadScopeID("alice"+tag, "main"), Layer: "todo", Name: "state"}: []byte("\x00\xffbinary"),
		inspect.ThreadBindingKey("main" + tag):                                                               []byte(`"alice"`),
		inspect.LastAssemblyKey("alice"+tag, "main"):                                                         []byte(`{"turn":3}`),
	}
	var keys []storage.Key
	for k, v := range vals {
		if _, err := st.Put(ctx, k, v, 0); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, storage.CompareKeys)
	return keys
}

// testCopyState copies the state seedState writes, with tag in its names
// (a database's state store is shared by every test using it), from src
// to dst, which holds nothing else.
func testCopyState(t *testing.T, src, dst storage.Store, tag string) {
	ctx := context.Background()
	keys := seedState(t, src, tag)
	got, err := environment.StateKeys(ctx, src)
	if err != nil || !slices.Equal(got, keys) {
		t.Fatalf("StateKeys = %v, %v; want %v", got, err, keys)
	}
	// dst holds one key already with other bytes: it is replaced.
	if _, err := dst.Put(ctx, keys[0], []byte(`stale`), 0); err != nil {
		t.Fatal(err)
	}
	res, err := environment.CopyState(ctx, src, dst, environment.StateCopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res != (environment.StateCopyResult{Source: 5, Assemblies: 1, Written: 5}) {
		t.Errorf("copy: %+v", res)
	}
	n, ok, bad, err := environment.VerifyState(ctx, src, dst, environment.StateCopyOptions{})
	if err != nil || n != 5 || ok != 5 || len(bad) != 0 {
		t.Errorf("verify: %d %d %v %v", n, ok, bad, err)
	}
	// Again: nothing to write.
	res, err = environment.CopyState(ctx, src, dst, environment.StateCopyOptions{})
	if err != nil || res.Written != 0 || res.Skipped != 5 {
		t.Errorf("second copy: %+v, %v", res, err)
	}
	// A value changed in the target, another deleted: verify names them.
	e, err := dst.Get(ctx, keys[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Put(ctx, keys[1], []byte(`changed`), e.Revision); err != nil {
		t.Fatal(err)
	}
	e, err = dst.Get(ctx, keys[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Delete(ctx, keys[2], e.Revision); err != nil {
		t.Fatal(err)
	}
	n, ok, bad, err = environment.VerifyState(ctx, src, dst, environment.StateCopyOptions{})
	if err != nil || n != 5 || ok != 3 || len(bad) != 2 {
		t.Fatalf("verify after damage: %d %d %v %v", n, ok, bad, err)
	}
	if bad[0].Key != keys[1] || bad[0].Missing || bad[1].Key != keys[2] || !bad[1].Missing {
		t.Errorf("mismatches %+v", bad)
	}
	// Include selects: the assemblies only.
	res, err = environment.CopyState(ctx, src, dst, environment.StateCopyOptions{Include: inspect.IsAssemblyKey})
	if err != nil || res.Source != 1 || res.Assemblies != 1 {
		t.Errorf("assemblies only: %+v, %v", res, err)
	}
}

func TestCopyStateDirectoryToMemory(t *testing.T) {
	ctx := context.Background()
	env, err := environment.Open(ctx, filepath.Join(t.TempDir(), "data"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	testCopyState(t, env.State, storage.NewMemory(), "")
}

func TestCopyStateToPostgres(t *testing.T) {
	base, _, _ := pgURL(t)
	ctx := context.Background()
	env, err := environment.Open(ctx, withCollection(base, "memories"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	src, err := environment.Open(ctx, filepath.Join(t.TempDir(), "data"), environment.Options{Embedder: hashing.New(16)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	testCopyState(t, src.State, env.State, fmt.Sprintf("-%08x", rand.Uint32()))
}

// A store that cannot list is refused by name.
type unlisted struct{ storage.Store }

func TestStateKeysCannotList(t *testing.T) {
	_, err := environment.StateKeys(context.Background(), unlisted{storage.NewMemory()})
	if !errors.Is(err, environment.ErrCannotList) {
		t.Errorf("err = %v", err)
	}
}

func TestPutState(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	k := storage.Key{Scope: "thread", ScopeID: "t", Layer: "l", Name: "state"}
	for i, want := range []environment.StateAction{environment.StateAdded, environment.StateUnchanged} {
		if act, err := environment.PutState(ctx, st, k, []byte(`1`)); err != nil || act != want {
			t.Errorf("put %d: %v, %v", i, act, err)
		}
	}
	if act, err := environment.PutState(ctx, st, k, []byte(`2`)); err != nil || act != environment.StateUpdated {
		t.Errorf("put 2: %v, %v", act, err)
	}
	if _, err := environment.PutState(ctx, st, storage.Key{Scope: "thread", Layer: "l", Name: "n"}, nil); !errors.Is(err, storage.ErrInvalidKey) {
		t.Errorf("invalid key: %v", err)
	}
}
