package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportDuplicateIDs: one id on two lines of an input is refused
// before anything is written, naming the id and both lines, from a file
// or stdin; --last-wins lets the last line win.
func TestImportDuplicateIDs(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	m := []string{"--store", store, "--embedder", "hash:64"}
	in := `{"memctl_export":1,"embedder":"hash-64","dimension":64}` + "\n" +
		`{"id":"a","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"first a"}` + "\n" +
		`{"id":"b","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"b"}` + "\n" +
		"\n" +
		`{"id":"a","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"second a"}` + "\n"
	file := filepath.Join(e.dir, "dup.jsonl")
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `import: duplicate id "a" on line 2 and on line 5: nothing imported (pass --last-wins`
	e.fails(1, want, append(m, "import", file)...)
	e.input(in).fails(1, want, append(m, "import")...)
	// Nothing written: the store was not even created.
	e.fails(3, "no store", "--store", store, "ls")

	// More than one: the first named, the others counted.
	more := in + `{"id":"b","text":"second b"}` + "\n" + `{"id":"a","text":"third a"}` + "\n"
	e.input(more).fails(1, `duplicate id "a" on line 2 and on line 5 (and 1 more id)`, append(m, "import")...)

	// --last-wins: the last line of each id is what is stored.
	out := e.ok(append(m, "import", "--last-wins", file)...).stdout
	if !strings.Contains(out, "2 added") {
		t.Errorf("import --last-wins: %s", out)
	}
	var a record
	decodeJSON(t, e.ok("--store", store, "show", "a", "--json").stdout, &a)
	if a.Text != "second a" {
		t.Errorf("after --last-wins a is %q, want the last line's", a.Text)
	}
	// A clean input still imports from stdin and from a file (read twice).
	clean := `{"id":"c","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"c"}` + "\n"
	if out := e.input(clean).ok(append(m, "import")...).stdout; !strings.Contains(out, "1 added") {
		t.Errorf("import from stdin: %s", out)
	}
	if out := e.ok(append(m, "import", file, "--last-wins")...).stdout; !strings.Contains(out, "0 added, 0 updated, 2 unchanged") {
		t.Errorf("re-import: %s", out)
	}
	// Bad lines are still the import's to report, after the check.
	e.input(clean+"not json\n").fails(1, "line 2", append(m, "import")...)
}

// TestReimportNonUnitVectors: a cosine store keeps its vectors at unit
// length; an input whose vectors are not (another backend's export, a
// hand-made file) is imported once, and a re-run reports nothing updated.
func TestReimportNonUnitVectors(t *testing.T) {
	e := newEnv(t)
	store := filepath.Join(e.dir, "data")
	in := `{"memctl_export":2,"embedder":"hash-4","dimension":4,"distance":"cosine"}` + "\n" +
		`{"id":"a","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"a","vector":[3,4,0,0]}` + "\n" +
		`{"id":"b","layer":"observations","kind":"observation","scope":{"thread":"t1"},"text":"b","vector":[0.1,0.2,0.3,0.4],"created_at":"2026-01-02T03:04:05.123456Z"}` + "\n"
	file := filepath.Join(e.dir, "in.jsonl")
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := e.ok("--store", store, "--embedder", "hash:4", "import", file).stdout; !strings.Contains(out, "2 added") {
		t.Fatalf("import: %s", out)
	}
	for range 2 {
		if out := e.ok("--store", store, "import", file).stdout; !strings.Contains(out, "0 added, 0 updated, 2 unchanged") {
			t.Errorf("re-import of non-unit vectors: %s", out)
		}
	}
	// A changed vector is still an update.
	changed := strings.Replace(in, "[3,4,0,0]", "[4,3,0,0]", 1)
	if out := e.input(changed).ok("--store", store, "import").stdout; !strings.Contains(out, "1 updated") {
		t.Errorf("import of a changed vector: %s", out)
	}
}
