// Package storagetest is the conformance suite every storage.Store
// implementation must pass. A driver's test calls RunConformance (or Run
// with a Harness when the store is durable) against the real engine. The
// cases named Keys* run when the store also implements storage.Lister, those
// named ScopeIDs* when it implements storage.ScopeLister, and skip
// otherwise:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, storagetest.Harness{
//			New:    func(t *testing.T) storage.Store { ... },
//			Reopen: func(t *testing.T, old storage.Store) storage.Store { ... },
//		})
//	}
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stratamem/strata/storage"
)

// Harness describes a Store implementation to the suite.
type Harness struct {
	// New returns an empty store, isolated from every other store New
	// returns. The suite closes it; New need not arrange that.
	New func(t *testing.T) storage.Store
	// Reopen, when set, returns a new store over the same data as old,
	// which the suite has already closed. It enables the durability cases.
	Reopen func(t *testing.T, old storage.Store) storage.Store
}

// RunConformance runs the suite's non-durability cases.
func RunConformance(t *testing.T, newStore func(t *testing.T) storage.Store) {
	Run(t, Harness{New: newStore})
}

// Run runs every case the harness supports, each as a subtest.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storagetest: Harness.New is nil")
	}
	cases := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"Update", testUpdate},
		{"StaleRevision", testStaleRevision},
		{"Delete", testDelete},
		{"RecreateAfterDelete", testRecreateAfterDelete},
		{"ScopeIsolation", testScopeIsolation},
		{"AwkwardKeys", testAwkwardKeys},
		{"InvalidKeys", testInvalidKeys},
		{"Values", testValues},
		{"ValuesAreCopied", testValuesAreCopied},
		{"ConcurrentIncrements", testConcurrentIncrements},
		{"ConcurrentCreate", testConcurrentCreate},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
		{"Reopen", testReopen},
		{"Keys", testKeys},
		{"KeysInvalidScope", testKeysInvalidScope},
		{"KeysCanceledContext", testKeysCanceledContext},
		{"KeysClosed", testKeysClosed},
		{"KeysReopen", testKeysReopen},
		{"ScopeIDs", testScopeIDs},
		{"ScopeIDsInvalidScope", testScopeIDsInvalidScope},
		{"ScopeIDsCanceledContext", testScopeIDsCanceledContext},
		{"ScopeIDsClosed", testScopeIDsClosed},
		{"ScopeIDsReopen", testScopeIDsReopen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

func open(t *testing.T, h Harness) storage.Store {
	t.Helper()
	s := h.New(t)
	if s == nil {
		t.Fatal("Harness.New returned nil")
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var ctx = context.Background()

func key(scope, id, layer, name string) storage.Key {
	return storage.Key{Scope: scope, ScopeID: id, Layer: layer, Name: name}
}

var k1 = key("thread", "thread-1", "scratchpad", "state")

func mustPut(t *testing.T, s storage.Store, k storage.Key, v string, expected int64) int64 {
	t.Helper()
	rev, err := s.Put(ctx, k, []byte(v), expected)
	if err != nil {
		t.Fatalf("Put(%s, %q, %d): %v", k, v, expected, err)
	}
	if rev <= expected || rev <= 0 {
		t.Fatalf("Put(%s, expected %d) returned revision %d; want a larger positive revision", k, expected, rev)
	}
	return rev
}

func wantEntry(t *testing.T, s storage.Store, k storage.Key, v string, rev int64) {
	t.Helper()
	e, err := s.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get(%s): %v", k, err)
	}
	if string(e.Value) != v || e.Revision != rev {
		t.Fatalf("Get(%s) = %q@%d, want %q@%d", k, e.Value, e.Revision, v, rev)
	}
}

func wantNotFound(t *testing.T, s storage.Store, k storage.Key) {
	t.Helper()
	e, err := s.Get(ctx, k)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get(%s) = %q@%d, %v; want ErrNotFound", k, e.Value, e.Revision, err)
	}
}

func wantConflict(t *testing.T, err error, k storage.Key, expected, actual int64) {
	t.Helper()
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	var ce *storage.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want a *storage.ConflictError in the chain", err, err)
	}
	if ce.Key != k || ce.Expected != expected || ce.Actual != actual {
		t.Fatalf("ConflictError = {%s, expected %d, actual %d}, want {%s, %d, %d}", ce.Key, ce.Expected, ce.Actual, k, expected, actual)
	}
}

func testCreateAndGet(t *testing.T, h Harness) {
	s := open(t, h)
	wantNotFound(t, s, k1)
	rev := mustPut(t, s, k1, "v1", 0)
	wantEntry(t, s, k1, "v1", rev)
	// Creating again must fail: the key exists now.
	_, err := s.Put(ctx, k1, []byte("other"), 0)
	wantConflict(t, err, k1, 0, rev)
	wantEntry(t, s, k1, "v1", rev)
	// Putting at a revision to an absent key must fail too.
	k2 := key("thread", "thread-1", "scratchpad", "absent")
	_, err = s.Put(ctx, k2, []byte("x"), 3)
	wantConflict(t, err, k2, 3, 0)
	wantNotFound(t, s, k2)
}

func testUpdate(t *testing.T, h Harness) {
	s := open(t, h)
	rev := mustPut(t, s, k1, "v1", 0)
	for i := 2; i <= 5; i++ {
		next := mustPut(t, s, k1, "v"+strconv.Itoa(i), rev)
		wantEntry(t, s, k1, "v"+strconv.Itoa(i), next)
		rev = next
	}
}

func testStaleRevision(t *testing.T, h Harness) {
	s := open(t, h)
	old := mustPut(t, s, k1, "v1", 0)
	cur := mustPut(t, s, k1, "v2", old)
	for _, expected := range []int64{old, cur + 1, -1, 0} {
		_, err := s.Put(ctx, k1, []byte("lost"), expected)
		wantConflict(t, err, k1, expected, cur)
		wantEntry(t, s, k1, "v2", cur)
	}
}

func testDelete(t *testing.T, h Harness) {
	s := open(t, h)
	old := mustPut(t, s, k1, "v1", 0)
	cur := mustPut(t, s, k1, "v2", old)

	wantConflict(t, s.Delete(ctx, k1, old), k1, old, cur)
	wantConflict(t, s.Delete(ctx, k1, 0), k1, 0, cur)
	wantEntry(t, s, k1, "v2", cur)

	if err := s.Delete(ctx, k1, cur); err != nil {
		t.Fatalf("Delete at current revision: %v", err)
	}
	wantNotFound(t, s, k1)
	// Deleting what is absent with expected 0 is not an error...
	if err := s.Delete(ctx, k1, 0); err != nil {
		t.Fatalf("Delete of absent key with expected 0: %v", err)
	}
	// ...but naming a revision it does not have is a conflict.
	wantConflict(t, s.Delete(ctx, k1, cur), k1, cur, 0)
	// A stale writer cannot resurrect the deleted value.
	_, err := s.Put(ctx, k1, []byte("stale"), cur)
	wantConflict(t, err, k1, cur, 0)
	wantNotFound(t, s, k1)
}

// Revisions must keep increasing across delete and re-create: otherwise a
// writer that read revision N before the delete could overwrite a newer
// value that happens to carry revision N again (the ABA problem).
func testRecreateAfterDelete(t *testing.T, h Harness) {
	s := open(t, h)
	r1 := mustPut(t, s, k1, "v1", 0)
	r2 := mustPut(t, s, k1, "v2", r1)
	if err := s.Delete(ctx, k1, r2); err != nil {
		t.Fatal(err)
	}
	r3 := mustPut(t, s, k1, "v3", 0)
	if r3 <= r2 {
		t.Fatalf("revision after delete and re-create is %d, not above the pre-delete %d", r3, r2)
	}
	for _, stale := range []int64{r1, r2} {
		_, err := s.Put(ctx, k1, []byte("stale"), stale)
		wantConflict(t, err, k1, stale, r3)
	}
	wantEntry(t, s, k1, "v3", r3)
}

// isolationKeys share layer and name but differ in scope or scope id, so a
// store that ignores either part mixes them up.
var isolationKeys = []storage.Key{
	key("thread", "t1", "memory", "state"),
	key("thread", "t2", "memory", "state"),
	key("resource", "t1", "memory", "state"),
	key("resource", "t2", "memory", "state"),
	key("global", "", "memory", "state"),
	key("thread", "t1", "memory", "other"),
	key("thread", "t1", "memory2", "state"),
}

func testScopeIsolation(t *testing.T, h Harness) {
	s := open(t, h)
	putDistinct(t, s, isolationKeys)
}

// putDistinct writes a different value under each key, checks every key
// reads its own value, then deletes the first and checks the rest survive.
func putDistinct(t *testing.T, s storage.Store, keys []storage.Key) {
	t.Helper()
	revs := make([]int64, len(keys))
	for i, k := range keys {
		wantNotFound(t, s, k) // no earlier key's write is visible here
		revs[i] = mustPut(t, s, k, fmt.Sprintf("value %d", i), 0)
	}
	for i, k := range keys {
		wantEntry(t, s, k, fmt.Sprintf("value %d", i), revs[i])
	}
	if err := s.Delete(ctx, keys[0], revs[0]); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, keys[0])
	for i, k := range keys[1:] {
		wantEntry(t, s, k, fmt.Sprintf("value %d", i+1), revs[i+1])
	}
}

// awkwardKeys are valid keys that trip naive encodings: separators inside
// parts (the first two render the same Key.String), path traversal, escape
// sequences, case-only differences (case-insensitive file systems), long
// and non-ASCII parts.
var awkwardKeys = []storage.Key{
	key("thread", "a/b", "c", "d"),
	key("thread", "a", "b/c", "d"),
	key("thread", "..", "..", ".."),
	key("thread", ".", "layer", "state"),
	key("thread", "../../etc", "passwd", "state"),
	key("thread", "a%2Fb", "c", "d"),
	key("thread", "a.b", "c", "d"),
	key("thread", "a", "b.c", "d"),
	key("thread", "A", "layer", "state"),
	key("thread", "a", "layer", "state"),
	key("thread", "a", "Layer", "state"),
	key("thread", "a", "layer", "State"),
	key("thread", "a b\t\n", "layer", "state"),
	key("thread", "a", "layer", "state~"),
	key("thread", "スレッド", "記憶", "状態"),
	key("thread", "emoji 🧠", "layer", "state"),
	key("resource", strings.Repeat("r", 1000), "layer", "state"),
	key("resource", strings.Repeat("r", 999), "layer", "state"),
	key("resource", strings.Repeat("r", 1000), strings.Repeat("l", 300), "state"),
	key("resource", "x", "layer", strings.Repeat("ñ", 400)),
	key("global", "", "a", "b"),
	key("global", "scoped", "a", "b"),
	key("global", "", "a\\b", "c"),
}

func testAwkwardKeys(t *testing.T, h Harness) {
	s := open(t, h)
	putDistinct(t, s, awkwardKeys)
}

func testInvalidKeys(t *testing.T, h Harness) {
	s := open(t, h)
	bad := []storage.Key{
		{},
		key("", "x", "l", "n"),
		key("Thread", "x", "l", "n"),
		key("session", "x", "l", "n"),
		key("thread", "", "l", "n"),
		key("resource", "", "l", "n"),
		key("thread", "x", "", "n"),
		key("thread", "x", "l", ""),
		key("global", "", "", "n"),
	}
	for _, k := range bad {
		if _, err := s.Get(ctx, k); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Get(%#v) err = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Put(ctx, k, []byte("v"), 0); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Put(%#v) err = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k, 0); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Delete(%#v) err = %v, want ErrInvalidKey", k, err)
		}
	}
}

func testValues(t *testing.T, h Harness) {
	s := open(t, h)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	values := map[string][]byte{
		"nil":    nil,
		"empty":  {},
		"binary": all,
		"json":   []byte(`{"b":[1,2,3],"a":"\u00e9"}`),
		"big":    big,
	}
	for name, v := range values {
		k := key("resource", "values", "layer", name)
		rev, err := s.Put(ctx, k, v, 0)
		if err != nil {
			t.Fatalf("Put %s: %v", name, err)
		}
		e, err := s.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get %s: %v", name, err)
		}
		if !bytes.Equal(e.Value, v) || e.Revision != rev {
			t.Fatalf("%s: read back %d bytes @%d, wrote %d bytes @%d", name, len(e.Value), e.Revision, len(v), rev)
		}
	}
}

func testValuesAreCopied(t *testing.T, h Harness) {
	s := open(t, h)
	in := []byte("original")
	rev := mustPut(t, s, k1, string(in), 0)
	if _, err := s.Put(ctx, k1, in, rev); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, k1)
	if err != nil {
		t.Fatal(err)
	}
	copy(in, "MUTATED!") // the caller reuses its buffer
	if string(e.Value) != "original" {
		t.Fatalf("mutating the Put argument changed a returned value: %q", e.Value)
	}
	copy(e.Value, "CHANGED!") // the caller scribbles on what it read
	wantEntry(t, s, k1, "original", e.Revision)
}

// Eight writers increment one counter 50 times each, re-reading and
// retrying on conflict. Any lost update leaves the counter below 400.
func testConcurrentIncrements(t *testing.T, h Harness) {
	s := open(t, h)
	const writers, each = 8, 50
	k := key("resource", "counter", "layer", "state")
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := Increment(ctx, s, k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value) != strconv.Itoa(writers*each) {
		t.Fatalf("counter = %s after %d increments: updates were lost", e.Value, writers*each)
	}
}

// Increment adds one to the decimal counter at k with a read,
// compare-and-swap, retry loop. It is exported for drivers' multi-process
// tests.
func Increment(ctx context.Context, s storage.Store, k storage.Key) error {
	for attempt := 0; ; attempt++ {
		if attempt > 100000 {
			return fmt.Errorf("increment %s: no progress after %d attempts", k, attempt)
		}
		n, rev := 0, int64(0)
		e, err := s.Get(ctx, k)
		switch {
		case err == nil:
			if n, err = strconv.Atoi(string(e.Value)); err != nil {
				return fmt.Errorf("increment %s: stored value %q: %w", k, e.Value, err)
			}
			rev = e.Revision
		case errors.Is(err, storage.ErrNotFound):
		default:
			return err
		}
		_, err = s.Put(ctx, k, []byte(strconv.Itoa(n+1)), rev)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
}

func testConcurrentCreate(t *testing.T, h Harness) {
	s := open(t, h)
	const writers = 8
	k := key("thread", "race", "layer", "state")
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Put(ctx, k, []byte("writer "+strconv.Itoa(w)), 0)
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, storage.ErrConflict):
			t.Fatalf("concurrent create: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent creates succeeded, want exactly 1", won, writers)
	}
}

func testCanceledContext(t *testing.T, h Harness) {
	s := open(t, h)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cctx, k1, []byte("v"), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with canceled context: err = %v, want context.Canceled", err)
	}
	wantNotFound(t, s, k1)
	if _, err := s.Get(cctx, k1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with canceled context: err = %v, want context.Canceled", err)
	}
	rev := mustPut(t, s, k1, "v", 0)
	if err := s.Delete(cctx, k1, rev); !errors.Is(err, context.Canceled) {
		t.Fatalf("Delete with canceled context: err = %v, want context.Canceled", err)
	}
	wantEntry(t, s, k1, "v", rev)
}

func testClosed(t *testing.T, h Harness) {
	s := h.New(t)
	rev := mustPut(t, s, k1, "v", 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(ctx, k1); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Put(ctx, k1, []byte("w"), rev); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Put after Close: %v, want ErrClosed", err)
	}
	if err := s.Delete(ctx, k1, rev); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Delete after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

func testReopen(t *testing.T, h Harness) {
	if h.Reopen == nil {
		t.Skip("Harness.Reopen not set: store is not durable")
	}
	s := open(t, h) // Close registered first, for a Put that stops the test
	keys := append(append([]storage.Key{}, isolationKeys...), awkwardKeys...)
	revs := make([]int64, len(keys))
	for i, k := range keys {
		revs[i] = mustPut(t, s, k, fmt.Sprintf("first %d", i), 0)
		if i%2 == 0 {
			revs[i] = mustPut(t, s, k, fmt.Sprintf("second %d", i), revs[i])
		}
	}
	deleted := keys[1]
	deletedRev := revs[1]
	if err := s.Delete(ctx, deleted, deletedRev); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = h.Reopen(t, s)
	if s == nil {
		t.Fatal("Harness.Reopen returned nil")
	}
	t.Cleanup(func() { _ = s.Close() })
	for i, k := range keys {
		if k == deleted {
			wantNotFound(t, s, k)
			continue
		}
		want := fmt.Sprintf("first %d", i)
		if i%2 == 0 {
			want = fmt.Sprintf("second %d", i)
		}
		wantEntry(t, s, k, want, revs[i])
	}
	// Compare-and-swap continues from the persisted revisions.
	k := keys[0]
	_, err := s.Put(ctx, k, []byte("stale"), revs[0]-1)
	wantConflict(t, err, k, revs[0]-1, revs[0])
	mustPut(t, s, k, "third", revs[0])
	// And the delete's revision history survived too.
	if r := mustPut(t, s, deleted, "reborn", 0); r <= deletedRev {
		t.Fatalf("re-created %s at revision %d after reopen, not above the deleted %d", deleted, r, deletedRev)
	}
}

func lister(t *testing.T, s storage.Store) storage.Lister {
	t.Helper()
	l, ok := s.(storage.Lister)
	if !ok {
		t.Skipf("%T does not implement storage.Lister", s)
	}
	return l
}

// listingKeys mix scopes and ids that share prefixes (t1, t10, "t1."),
// layers that share prefixes, and the awkward keys, among them long ones
// that a file store must hash.
var listingKeys = append([]storage.Key{
	key("thread", "t1", "memory", "state"),
	key("thread", "t1", "memory", "other"),
	key("thread", "t1", "memory2", "state"),
	key("thread", "t1", "_strata", "last_assembly"),
	key("thread", "t1", strings.Repeat("long", 80), "state"),
	key("thread", "t10", "memory", "state"),
	key("thread", "t1.", "memory", "state"),
	key("thread", "t", "1.memory", "state"),
	key("resource", "t1", "memory", "state"),
	key("resource", "t1", "Memory", "state"),
	key("global", "", "memory", "state"),
}, awkwardKeys...)

// wantKeys lists every scope of keys in s and checks each listing holds
// exactly that scope's keys among keys, sorted, minus those in gone.
func wantKeys(t *testing.T, s storage.Store, keys []storage.Key, gone map[storage.Key]bool) {
	t.Helper()
	l := lister(t, s)
	type scope struct{ scope, id string }
	want := map[scope][]storage.Key{}
	for _, k := range keys {
		sc := scope{k.Scope, k.ScopeID}
		if _, ok := want[sc]; !ok {
			want[sc] = []storage.Key{}
		}
		if !gone[k] {
			want[sc] = append(want[sc], k)
		}
	}
	for sc, w := range want {
		got, err := l.Keys(ctx, sc.scope, sc.id)
		if err != nil {
			t.Fatalf("Keys(%q, %.40q): %v", sc.scope, sc.id, err)
		}
		if got == nil {
			t.Fatalf("Keys(%q, %.40q) = nil, want a non-nil slice", sc.scope, sc.id)
		}
		if !slices.IsSortedFunc(got, storage.CompareKeys) {
			t.Errorf("Keys(%q, %.40q) is not sorted: %v", sc.scope, sc.id, got)
		}
		slices.SortFunc(w, storage.CompareKeys)
		if !slices.Equal(got, w) {
			t.Errorf("Keys(%q, %.40q) =\n  %v\nwant\n  %v", sc.scope, sc.id, got, w)
		}
	}
}

func testKeys(t *testing.T, h Harness) {
	s := open(t, h)
	l := lister(t, s)
	for _, sc := range [][2]string{{"thread", "t1"}, {"resource", "nobody"}, {"global", ""}} {
		got, err := l.Keys(ctx, sc[0], sc[1])
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Keys(%q, %q) of an empty store = %v, %v; want an empty slice", sc[0], sc[1], got, err)
		}
	}
	revs := putNumbered(t, s, listingKeys)
	wantKeys(t, s, listingKeys, nil)
	// Listing changes nothing.
	wantNumbered(t, s, listingKeys, revs)
	// Deleted keys are gone from the listing (a file store's tombstones
	// included); their neighbours stay.
	gone := map[storage.Key]bool{}
	deleteKeys(t, s, revs, gone, listingKeys[0], listingKeys[4], listingKeys[8], listingKeys[len(listingKeys)-5], listingKeys[len(listingKeys)-7])
	wantKeys(t, s, listingKeys, gone)
	// Re-created keys come back once.
	k := listingKeys[0]
	mustPut(t, s, k, "again", 0)
	delete(gone, k)
	wantKeys(t, s, listingKeys, gone)
	// Deleting every key of a scope empties its listing.
	got, err := l.Keys(ctx, "thread", "t1")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range got {
		e, err := s.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get(%s) of a listed key: %v", k, err)
		}
		if err := s.Delete(ctx, k, e.Revision); err != nil {
			t.Fatal(err)
		}
		gone[k] = true
	}
	if got, err := l.Keys(ctx, "thread", "t1"); err != nil || len(got) != 0 {
		t.Fatalf("Keys after deleting the scope = %v, %v", got, err)
	}
	wantKeys(t, s, listingKeys, gone)
}

func testKeysInvalidScope(t *testing.T, h Harness) {
	s := open(t, h)
	l := lister(t, s)
	for _, sc := range [][2]string{{"", ""}, {"", "x"}, {"Thread", "x"}, {"session", "x"}, {"thread", ""}, {"resource", ""}} {
		if got, err := l.Keys(ctx, sc[0], sc[1]); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Keys(%q, %q) = %v, %v; want ErrInvalidKey", sc[0], sc[1], got, err)
		}
	}
	// Global with an id is a valid, separate scope, as for Key.Validate.
	mustPut(t, s, key("global", "scoped", "a", "b"), "v", 0)
	if got, err := l.Keys(ctx, "global", "scoped"); err != nil || len(got) != 1 {
		t.Errorf("Keys(global, scoped) = %v, %v", got, err)
	}
	if got, err := l.Keys(ctx, "global", ""); err != nil || len(got) != 0 {
		t.Errorf("Keys(global, \"\") = %v, %v", got, err)
	}
}

func listKeys(ctx context.Context, l storage.Lister) (any, error) {
	return l.Keys(ctx, k1.Scope, k1.ScopeID)
}

func testKeysCanceledContext(t *testing.T, h Harness) {
	wantListFails(t, h, false, lister, "Keys", listKeys)
}

func testKeysClosed(t *testing.T, h Harness) {
	wantListFails(t, h, true, lister, "Keys", listKeys)
}

// wantListFails checks that list, called on the listing need returns for a
// store of h holding k1, fails with context.Canceled when its context is
// canceled or, with closeFirst, with storage.ErrClosed when the store was
// closed. need skips a store without the listing.
func wantListFails[L any](t *testing.T, h Harness, closeFirst bool, need func(*testing.T, storage.Store) L, name string, list func(context.Context, L) (any, error)) {
	t.Helper()
	s := open(t, h) // a second Close returns ErrClosed, ignored
	l := need(t, s)
	mustPut(t, s, k1, "v", 0)
	lctx, want, wantName, when := ctx, storage.ErrClosed, "ErrClosed", "after Close"
	if closeFirst {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		lctx, want, wantName, when = cctx, context.Canceled, "context.Canceled", "with canceled context"
	}
	if got, err := list(lctx, l); !errors.Is(err, want) {
		t.Fatalf("%s %s = %v, %v; want %s", name, when, got, err, wantName)
	}
}

// testKeysReopen lists from a fresh store over the same data: keys are
// recovered from what is persisted, not from a cache of the writer.
func testKeysReopen(t *testing.T, h Harness) {
	if h.Reopen == nil {
		t.Skip("Harness.Reopen not set: store is not durable")
	}
	// open registers Close first: lister may skip, and a failed Put may
	// stop the test, before the explicit Close below. (A second Close
	// returns ErrClosed, ignored.)
	s := open(t, h)
	lister(t, s)
	revs := putNumbered(t, s, listingKeys)
	gone := map[storage.Key]bool{}
	deleteKeys(t, s, revs, gone, listingKeys[1], listingKeys[len(listingKeys)-6])
	wantKeys(t, closeReopen(t, h, s), listingKeys, gone)
}

// putNumbered puts "value i" at the i-th of keys, each new, and returns
// the revisions written.
func putNumbered(t *testing.T, s storage.Store, keys []storage.Key) map[storage.Key]int64 {
	t.Helper()
	revs := make(map[storage.Key]int64, len(keys))
	for i, k := range keys {
		revs[k] = mustPut(t, s, k, fmt.Sprintf("value %d", i), 0)
	}
	return revs
}

// wantNumbered checks that keys still hold what putNumbered put.
func wantNumbered(t *testing.T, s storage.Store, keys []storage.Key, revs map[storage.Key]int64) {
	t.Helper()
	for i, k := range keys {
		wantEntry(t, s, k, fmt.Sprintf("value %d", i), revs[k])
	}
}

// deleteKeys deletes each of keys at its revision in revs and adds it to
// gone.
func deleteKeys(t *testing.T, s storage.Store, revs map[storage.Key]int64, gone map[storage.Key]bool, keys ...storage.Key) {
	t.Helper()
	for _, k := range keys {
		if err := s.Delete(ctx, k, revs[k]); err != nil {
			t.Fatal(err)
		}
		gone[k] = true
	}
}

// closeReopen closes s and returns h.Reopen's store over its data, closed
// when the test ends.
func closeReopen(t *testing.T, h Harness, s storage.Store) storage.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = h.Reopen(t, s)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func scopeLister(t *testing.T, s storage.Store) storage.ScopeLister {
	t.Helper()
	l, ok := s.(storage.ScopeLister)
	if !ok {
		t.Skipf("%T does not implement storage.ScopeLister", s)
	}
	return l
}

// scopeIDKeys spread values over scope ids that share prefixes: the
// threads of resources (ThreadScopeID), a plain thread named like a
// resource, resources whose ids hold LIKE wildcards ("%", "_") that a
// prefix must match literally, ids of one and many keys, a long id a file
// store must hash, NUL and 0xff bytes (the successor of a prefix ending in
// 0xff is not the prefix with its last byte incremented), and the same ids
// in other scopes.
var scopeIDKeys = []storage.Key{
	key("thread", storage.ThreadScopeID("alice", "main"), "memory", "state"),
	key("thread", storage.ThreadScopeID("alice", "main"), "_strata", "last_assembly"),
	key("thread", storage.ThreadScopeID("alice", "work"), "memory", "state"),
	key("thread", storage.ThreadScopeID("alice", "Work"), "memory", "state"),
	key("thread", storage.ThreadScopeID("alice", "w.o/r%k"), "memory", "state"),
	key("thread", storage.ThreadScopeID("alice", "\x00"), "memory", "state"),
	key("thread", storage.ThreadScopeID("alice", strings.Repeat("long", 80)), "memory", "state"),
	key("thread", "alice", "memory", "state"),
	key("thread", "alicia", "memory", "state"),
	key("thread", storage.ThreadScopeID("alicia", "main"), "memory", "state"),
	key("thread", storage.ThreadScopeID("bob", "main"), "memory", "state"),
	key("thread", storage.ThreadScopeID("a%b", "t"), "memory", "state"),
	key("thread", storage.ThreadScopeID("a_b", "t"), "memory", "state"),
	key("thread", storage.ThreadScopeID("aXb", "t"), "memory", "state"),
	key("thread", storage.ThreadScopeID("a%", "t"), "memory", "state"),
	key("thread", storage.ThreadScopeID("a_", "t"), "memory", "state"),
	key("thread", storage.ThreadScopeID("ab", "t"), "memory", "state"),
	key("thread", "%", "memory", "state"),
	key("thread", "_", "memory", "state"),
	key("thread", "z\xff", "memory", "state"),
	key("thread", "z\xff\xff", "memory", "state"),
	key("thread", "z\xff\xff\x00", "memory", "state"),
	key("thread", "{", "memory", "state"),
	key("thread", "\xff", "memory", "state"),
	key("thread", "\xff\xff", "memory", "state"),
	key("thread", "スレッド", "記憶", "状態"),
	key("resource", "alice", "profile", "state"),
	key("resource", storage.ThreadScopeID("alice", "main"), "profile", "state"),
	key("resource", "bob", "profile", "state"),
	key("global", "", "census", "state"),
	key("global", "scoped", "census", "state"),
}

// scopeIDPrefixes are the prefixes every listing is checked with: none,
// some or all of a scope's ids match each.
var scopeIDPrefixes = []string{
	"", "a", "alice", storage.ThreadScopeID("alice", ""), storage.ThreadScopeID("alice", "main"),
	storage.ThreadScopeID("alice", "mainx"), storage.ThreadScopeID("alice", "w"), "alicia",
	"bob", storage.ThreadScopeID("bob", ""), "nobody", "a%", "a_", "a%b", "a_b", "%", "_", "%%", "__",
	"z", "z\xff", "z\xff\xff", "\xff", "\xff\xff", "\xff\xff\xff", "{", "ス", "s", "scoped",
}

// wantScopeIDs checks ScopeIDs of every scope and prefix of
// scopeIDPrefixes against the scope ids of the keys not in gone.
func wantScopeIDs(t *testing.T, s storage.Store, keys []storage.Key, gone map[storage.Key]bool) {
	t.Helper()
	l := scopeLister(t, s)
	for _, scope := range []string{"thread", "resource", "global"} {
		for _, prefix := range scopeIDPrefixes {
			want := []string{}
			for _, k := range keys {
				if !gone[k] && k.Scope == scope && strings.HasPrefix(k.ScopeID, prefix) && !slices.Contains(want, k.ScopeID) {
					want = append(want, k.ScopeID)
				}
			}
			slices.Sort(want)
			got, err := l.ScopeIDs(ctx, scope, prefix)
			if err != nil {
				t.Fatalf("ScopeIDs(%q, %q): %v", scope, prefix, err)
			}
			if got == nil {
				t.Fatalf("ScopeIDs(%q, %q) = nil, want a non-nil slice", scope, prefix)
			}
			if !slices.Equal(got, want) {
				t.Errorf("ScopeIDs(%q, %q) =\n  %.60q\nwant\n  %.60q", scope, prefix, got, want)
			}
		}
	}
}

func testScopeIDs(t *testing.T, h Harness) {
	s := open(t, h)
	l := scopeLister(t, s)
	for _, scope := range []string{"thread", "resource", "global"} {
		for _, prefix := range []string{"", "alice"} {
			got, err := l.ScopeIDs(ctx, scope, prefix)
			if err != nil || got == nil || len(got) != 0 {
				t.Fatalf("ScopeIDs(%q, %q) of an empty store = %q, %v; want an empty slice", scope, prefix, got, err)
			}
		}
	}
	revs := putNumbered(t, s, scopeIDKeys)
	wantScopeIDs(t, s, scopeIDKeys, nil)
	// Listing changes nothing.
	wantNumbered(t, s, scopeIDKeys, revs)
	// A scope id whose keys are all deleted is gone (a file store's
	// tombstones included); one that keeps a key stays, listed once.
	gone := map[storage.Key]bool{}
	deleteKeys(t, s, revs, gone,
		scopeIDKeys[0], // alice's main keeps its assembly
		scopeIDKeys[2], // alice's work goes
		scopeIDKeys[6], // the hashed one goes
		key("thread", storage.ThreadScopeID("a%b", "t"), "memory", "state"),
		key("thread", "z\xff\xff", "memory", "state"),
		key("global", "", "census", "state"))
	wantScopeIDs(t, s, scopeIDKeys, gone)
	if got, err := l.ScopeIDs(ctx, "thread", storage.ThreadScopeID("alice", "main")); err != nil || !slices.Equal(got, []string{storage.ThreadScopeID("alice", "main")}) {
		t.Errorf("ScopeIDs of alice's main after deleting one of its two keys = %q, %v", got, err)
	}
	// Re-created, a scope id comes back.
	k := scopeIDKeys[2]
	mustPut(t, s, k, "again", 0)
	delete(gone, k)
	wantScopeIDs(t, s, scopeIDKeys, gone)
}

func testScopeIDsInvalidScope(t *testing.T, h Harness) {
	s := open(t, h)
	l := scopeLister(t, s)
	mustPut(t, s, k1, "v", 0)
	for _, scope := range []string{"", "Thread", "session", "thread/"} {
		if got, err := l.ScopeIDs(ctx, scope, ""); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("ScopeIDs(%q, \"\") = %q, %v; want ErrInvalidKey", scope, got, err)
		}
	}
	// An empty prefix is valid in every scope, unlike an empty scope id.
	if got, err := l.ScopeIDs(ctx, "thread", ""); err != nil || !slices.Equal(got, []string{k1.ScopeID}) {
		t.Errorf("ScopeIDs(thread, \"\") = %q, %v; want [%q]", got, err, k1.ScopeID)
	}
}

func listScopeIDs(ctx context.Context, l storage.ScopeLister) (any, error) {
	return l.ScopeIDs(ctx, k1.Scope, "")
}

func testScopeIDsCanceledContext(t *testing.T, h Harness) {
	wantListFails(t, h, false, scopeLister, "ScopeIDs", listScopeIDs)
}

func testScopeIDsClosed(t *testing.T, h Harness) {
	wantListFails(t, h, true, scopeLister, "ScopeIDs", listScopeIDs)
}

// testScopeIDsReopen lists from a fresh store over the same data.
func testScopeIDsReopen(t *testing.T, h Harness) {
	if h.Reopen == nil {
		t.Skip("Harness.Reopen not set: store is not durable")
	}
	s := open(t, h) // see testKeysReopen
	scopeLister(t, s)
	revs := putNumbered(t, s, scopeIDKeys)
	gone := map[storage.Key]bool{}
	deleteKeys(t, s, revs, gone, scopeIDKeys[2], scopeIDKeys[6], scopeIDKeys[len(scopeIDKeys)-1])
	wantScopeIDs(t, closeReopen(t, h, s), scopeIDKeys, gone)
}
