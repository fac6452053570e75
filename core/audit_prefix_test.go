package core_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stratamem/strata/core"
)

// auditTool is a host tool with a schema given as raw bytes, so a test
// controls their key order and spacing.
type auditTool struct{ spec core.ToolSpec }

func (t auditTool) Spec() core.ToolSpec { return t.spec }
func (t auditTool) StateID() string     { return "" }
func (t auditTool) Execute(context.Context, core.ToolContext, string) (string, error) {
	return "ok", nil
}

func toolSpec(name, desc, params string) core.ToolSpec {
	return core.ToolSpec{Name: name, Description: desc, Parameters: json.RawMessage(params)}
}

// prefixView is the first view of a session offering the tools.
func prefixView(t *testing.T, specs ...core.ToolSpec) *core.View {
	t.Helper()
	ctx := context.Background()
	var tools []core.Tool
	for _, sp := range specs {
		tools = append(tools, auditTool{sp})
	}
	rt, err := core.NewRuntime(core.Config{System: []core.Item{core.SystemMessage("You are a careful assistant.")}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Start(ctx, core.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, core.UserMessage("hello")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Assemble(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.PrefixHash == "" {
		t.Fatal("no prefix hash")
	}
	return v
}

// View.PrefixHash rotates when a tool is swapped (another name, schema or
// description, one more tool) and stays the same when a schema differs
// only in key order or spacing, at any depth, or the tools are registered
// in another order: the hash is over canonical JSON of the sorted tools.
func TestAuditPrefixHashFollowsTools(t *testing.T) {
	const schema = `{"type":"object","properties":{"path":{"type":"string","description":"file path"}},"required":["path"]}`
	read := toolSpec("read", "Reads a file.", schema)
	base := prefixView(t, read)

	same := map[string][]core.ToolSpec{
		"top-level keys reordered": {toolSpec("read", "Reads a file.",
			`{"required":["path"],"properties":{"path":{"type":"string","description":"file path"}},"type":"object"}`)},
		"nested keys reordered and spaced": {toolSpec("read", "Reads a file.",
			"{ \"type\": \"object\",\n  \"properties\": { \"path\": { \"description\": \"file path\", \"type\": \"string\" } },\n  \"required\": [ \"path\" ] }")},
	}
	for name, specs := range same {
		v := prefixView(t, specs...)
		if v.PrefixHash != base.PrefixHash {
			t.Errorf("%s: the prefix hash changed (%s, was %s)", name, v.PrefixHash[:12], base.PrefixHash[:12])
		}
		if string(v.Tools[0].Parameters) != string(base.Tools[0].Parameters) {
			t.Errorf("%s: schema offered as %s, was %s", name, v.Tools[0].Parameters, base.Tools[0].Parameters)
		}
	}

	write := toolSpec("write", "Writes a file.", schema)
	rotates := map[string][]core.ToolSpec{
		"renamed":             {toolSpec("read_file", "Reads a file.", schema)},
		"another description": {toolSpec("read", "Reads a whole file.", schema)},
		"another schema": {toolSpec("read", "Reads a file.",
			`{"type":"object","properties":{"file":{"type":"string","description":"file path"}},"required":["file"]}`)},
		"swapped for another tool": {write},
		"one more tool":            {read, write},
	}
	seen := map[string]string{base.PrefixHash: "base"}
	for name, specs := range rotates {
		v := prefixView(t, specs...)
		if prev, dup := seen[v.PrefixHash]; dup {
			t.Errorf("%s: the prefix hash equals that of %s", name, prev)
		}
		seen[v.PrefixHash] = name
	}
	// Canonical JSON sorts object keys only: an array's order is meaning.
	a := prefixView(t, toolSpec("read", "", `{"type":"object","required":["n","path"]}`))
	b := prefixView(t, toolSpec("read", "", `{"type":"object","required":["path","n"]}`))
	if a.PrefixHash == b.PrefixHash {
		t.Error("reordering a JSON array (not an object) kept the prefix hash")
	}

	// Registration order does not matter: tools are offered sorted.
	ab, ba := prefixView(t, read, write), prefixView(t, write, read)
	if ab.PrefixHash != ba.PrefixHash {
		t.Errorf("registration order changed the prefix hash: %s vs %s", ab.PrefixHash[:12], ba.PrefixHash[:12])
	}
	if ab.Tools[0].Name != "read" || ba.Tools[0].Name != "read" {
		t.Errorf("tools offered as %s, %s first: want sorted", ab.Tools[0].Name, ba.Tools[0].Name)
	}
}
