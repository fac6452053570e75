package chromem

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratamem/strata/vectorstore"
)

// dirState is the content of every file of a collection directory but the
// LOCK file (which Salvage takes).
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(collDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		if e.Name() == lockName {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(collDir(dir), e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

// TestSalvage damages the log of writeThree (upsert a,b | delete a | upsert
// c,d) in each way open refuses, and salvages it: a dry run reports and
// changes nothing, the salvage keeps the damaged log and every intact
// frame's effect, and the collection then opens with those records.
func TestSalvage(t *testing.T) {
	requireWired(t)
	src := t.TempDir()
	full, _ := writeThree(t, src)
	starts := frameStarts(t, full)
	flip := func(pos int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			bad := append([]byte(nil), full...)
			bad[pos] ^= 0x08
			writeLog(t, dir, bad)
		}
	}
	end := int64(len(full))
	s1, s2 := int64(starts[1]), int64(starts[2])
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, dir string)
		want    string // records after salvage
		frames  int
		damaged []Span
		missing int64
		noLog   bool
	}{
		{"last frame flipped", flip(len(full) - 3), "b", 2, []Span{{s2, end - s2}}, 0, false},
		{"first frame flipped", flip(frameHeader + 3), "c,d", 2, []Span{{0, s1}}, 0, false},
		{"middle frame flipped", flip(starts[1] + frameHeader + 1), "a,b,c,d", 2, []Span{{s1, s2 - s1}}, 0, false},
		{"middle length flipped", flip(starts[1] + 2), "a,b,c,d", 2, []Span{{s1, s2 - s1}}, 0, false},
		{"truncated at a frame boundary", func(t *testing.T, dir string) { writeLog(t, dir, full[:s2]) }, "b", 2, nil, end - s2, false},
		{"log deleted", func(t *testing.T, dir string) { os.Remove(logPath(dir)) }, "", 0, nil, end, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, src)
			tc.damage(t, dir)
			mustCorrupt(t, dir, tc.name)
			damagedLog, _ := os.ReadFile(logPath(dir))
			before := dirState(t, dir)

			rep, err := Salvage(bg, dir, "c", SalvageOptions{DryRun: true})
			if err != nil {
				t.Fatalf("dry run: %v", err)
			}
			if got := dirState(t, dir); !maps.Equal(got, before) {
				t.Fatalf("the dry run changed the directory: %v", slices.Sorted(maps.Keys(got)))
			}
			check := func(rep SalvageReport) {
				t.Helper()
				if rep.Healthy || rep.Problem == "" || rep.Records != len(splitIDs(tc.want)) || rep.Frames != tc.frames ||
					!slices.Equal(rep.Damaged, tc.damaged) || rep.MissingBytes != tc.missing || rep.LogMissing != tc.noLog {
					t.Fatalf("report %+v, want %d records from %d frames, damaged %v, %d bytes missing", rep, len(splitIDs(tc.want)), tc.frames, tc.damaged, tc.missing)
				}
			}
			check(rep)
			if rep.KeptAs != "" || !rep.DryRun {
				t.Fatalf("dry run report %+v", rep)
			}

			rep, err = Salvage(bg, dir, "c", SalvageOptions{})
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			check(rep)
			if tc.noLog {
				if rep.KeptAs != "" {
					t.Fatalf("kept %q without a log", rep.KeptAs)
				}
			} else if kept, err := os.ReadFile(rep.KeptAs); err != nil || !bytes.Equal(kept, damagedLog) {
				t.Fatalf("the damaged log is not kept as %q: %v", rep.KeptAs, err)
			}
			c, err := OpenCollection(bg, dir, "c", nil)
			if err != nil {
				t.Fatalf("open after salvage: %v", err)
			}
			if got := ids(t, c); got != tc.want {
				t.Fatalf("records after salvage %q, want %q", got, tc.want)
			}
			if err := c.Upsert(bg, rec("z", 4, 1)); err != nil {
				t.Fatal(err)
			}
			c.Close()
			rep, err = Salvage(bg, dir, "c", SalvageOptions{})
			if err != nil || !rep.Healthy || rep.KeptAs != "" || rep.Records != len(splitIDs(tc.want))+1 {
				t.Fatalf("salvage of the salvaged collection: %+v %v", rep, err)
			}
		})
	}
}

// TestSalvageHealthyAndErrors: a healthy collection (with a torn tail,
// which open cuts) is left alone; an open collection is locked; a missing
// collection is not found.
func TestSalvageHealthyAndErrors(t *testing.T) {
	src := t.TempDir()
	full, _ := writeThree(t, src)
	writeLog(t, src, append(append([]byte(nil), full...), 1, 2, 3))
	before := dirState(t, src)
	rep, err := Salvage(bg, src, "c", SalvageOptions{})
	if err != nil || !rep.Healthy || rep.Records != 3 || rep.Frames != 3 || rep.Problem != "" {
		t.Fatalf("healthy: %+v %v", rep, err)
	}
	if got := dirState(t, src); !maps.Equal(got, before) {
		t.Fatal("salvage changed a healthy collection")
	}
	c, err := OpenCollection(bg, src, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Salvage(bg, src, "c", SalvageOptions{DryRun: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("salvage of an open collection: %v, want ErrLocked", err)
	}
	c.Close()
	if _, err := Salvage(bg, t.TempDir(), "c", SalvageOptions{}); !errors.Is(err, vectorstore.ErrNotFound) {
		t.Fatalf("salvage of no collection: %v, want ErrNotFound", err)
	}
	if _, err := Salvage(bg, src, "../c", SalvageOptions{}); !errors.Is(err, vectorstore.ErrInvalidArgument) {
		t.Fatalf("salvage of a bad name: %v", err)
	}
}

func splitIDs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
