package wirename

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
)

// valid is the pattern both APIs document for tool names.
var valid = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestName(t *testing.T) {
	cases := [][2]string{
		{"notes/add", "notes__add"},
		{"files/read.all", "files__read_all"},
		{"a.b c/d-e", "a_b_c__d-e"},
		{"é/x", "____x"}, // each byte of a multi-byte rune is replaced
		{"", "_"},
		{strings.Repeat("x", MaxLen), strings.Repeat("x", MaxLen)},
	}
	for _, c := range cases {
		got := Name(c[0])
		if got != c[1] || !valid.MatchString(got) {
			t.Errorf("Name(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}

func TestLongNamesStayValidAndDistinct(t *testing.T) {
	a, b := Name(strings.Repeat("layer/", 20)), Name(strings.Repeat("layer/", 21))
	for _, n := range []string{a, b} {
		if len(n) != MaxLen || !valid.MatchString(n) {
			t.Fatalf("%q (%d bytes) is not a valid wire name", n, len(n))
		}
	}
	if a == b {
		t.Fatalf("two long names share the wire name %q", a)
	}
	if Name(strings.Repeat("layer/", 20)) != a {
		t.Fatal("the mapping is not stable")
	}
}

func TestTable(t *testing.T) {
	tab, err := NewTable([]core.ToolSpec{{Name: "notes/add"}, {Name: "search"}, {Name: "notes/add"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Original("notes__add"); got != "notes/add" {
		t.Fatalf("Original(notes__add) = %q", got)
	}
	if got := tab.Original("unknown__fn"); got != "unknown__fn" {
		t.Fatalf("an unoffered name must come back unchanged, got %q", got)
	}
}

var errInvalid = errors.New("adapter: invalid request")

func TestTableCollision(t *testing.T) {
	tools := []core.ToolSpec{{Name: "a_b/c"}, {Name: "a.b/c"}}
	_, err := NewTable(tools, nil)
	var ce *CollisionError
	if !errors.As(err, &ce) || ce.First != "a_b/c" || ce.Second != "a.b/c" || ce.Wire != "a_b__c" {
		t.Fatalf("err = %v, want a CollisionError on a_b__c", err)
	}
	if want := `tools "a_b/c" and "a.b/c" both map to the tool name "a_b__c"`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	// With the adapter's sentinel both it and the collision match.
	_, err = NewTable(tools, errInvalid)
	if !errors.Is(err, errInvalid) || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want the sentinel around a CollisionError", err)
	}
	if want := `adapter: invalid request: tools "a_b/c" and "a.b/c" both map to the tool name "a_b__c"`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}
