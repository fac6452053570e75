package recallquality

import (
	"context"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory/semantic"
)

func TestCorporaParse(t *testing.T) {
	types := map[string]int{}
	for _, name := range Corpora {
		c, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Turns() < 200 || len(c.Questions) < 40 || len(c.Sessions) < 10 {
			t.Fatalf("%s: %d turns, %d questions, %d sessions: too small", name, c.Turns(), len(c.Questions), len(c.Sessions))
		}
		prev := c.Sessions[0].Start
		for _, s := range c.Sessions[1:] {
			if !s.Start.After(prev) {
				t.Fatalf("%s: session %s not after the previous one", name, s.ID)
			}
			prev = s.Start
		}
		for _, q := range c.Questions {
			types[q.Type]++
		}
	}
	for _, typ := range Types {
		if types[typ] < 10 {
			t.Errorf("only %d %s questions", types[typ], typ)
		}
	}
}

func TestParseErrors(t *testing.T) {
	conv := "== s01 2024-01-01 10:00\nU[a]: hello\nA: hi\n"
	cases := map[string][2]string{
		"unknown evidence": {conv, "? direct hi?\n= nope\n"},
		"unknown type":     {conv, "? weird hi?\n= a\n"},
		"no evidence":      {conv, "? direct hi?\n"},
		"orphan evidence":  {conv, "= a\n"},
		"duplicate label":  {conv + "U[a]: again\n", "? direct hi?\n= a\n"},
		"turn before date": {"U: hello\n", ""},
		"bad line":         {conv + "X: what\n", ""},
	}
	for name, c := range cases {
		if _, err := Parse("x", strings.NewReader(c[0]), strings.NewReader(c[1])); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	c, err := Parse("x", strings.NewReader(conv), strings.NewReader("? direct hi?\n= a s01.02\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Questions[0].Evidence; len(got) != 2 || got[0] != "s01.01" || got[1] != "s01.02" {
		t.Fatalf("evidence %v", got)
	}
	if c.Sessions[0].Turns[1].Role != core.RoleAssistant || c.Sessions[0].Turns[1].At.Sub(c.Sessions[0].Start) != TurnGap {
		t.Fatalf("turn %+v", c.Sessions[0].Turns[1])
	}
}

// The harness runs end to end without the model (hashing embedder): the
// records match the corpus and the lexical ranking does not depend on the
// embedder.
func TestHarnessHashing(t *testing.T) {
	ctx := context.Background()
	c, err := Load("dev2")
	if err != nil {
		t.Fatal(err)
	}
	var lex []*Result
	for _, dim := range []int{64, 256} {
		b, err := Open(ctx, t.TempDir(), c, hashing.New(dim), semantic.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Evaluate(ctx, semantic.ModeLexical, semantic.Options{}, dim == 64)
		if err != nil {
			t.Fatal(err)
		}
		lex = append(lex, r)
		h, err := b.Evaluate(ctx, semantic.ModeHybrid, semantic.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range []*Result{r, h} {
			if len(res.Questions) != len(c.Questions) || res.Recall[10] <= 0 || res.Recall[10] > 1 || res.Recall[5] > res.Recall[10] {
				t.Fatalf("%s dim %d: implausible result %+v", res.Mode, dim, res.Recall)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if lex[0].Recall[10] != lex[1].Recall[10] || lex[0].Recall[5] != lex[1].Recall[5] {
		t.Fatalf("lexical results depend on the embedder: %v vs %v", lex[0].Recall, lex[1].Recall)
	}
	if lex[0].Shown <= 0 {
		t.Fatalf("recall hook showed no evidence at all")
	}
	md := (&Report{Command: "test", Corpora: []*Corpus{c}, Results: lex}).Markdown()
	if !strings.Contains(md, "| dev2 | hash-64 | lexical |") {
		t.Fatalf("report:\n%s", md)
	}
}
