package recallquality

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory/semantic"
)

// A conversation in the LoCoMo format, made up for the test (the real
// data is never copied into the repository); "turn_id" stands for the
// format's key of a turn's id (see turnIDKey).
var locomoSample = withTurnIDKey(locomoTemplate)

const locomoTemplate = `{
  "speaker_a": "Ines", "speaker_b": "Tomas",
  "session_1_date_time": "9:15 am on 3 March, 2023",
  "session_1": [
    {"speaker": "Ines", "turn_id": "D1:1", "text": "Hi Tomas! I finally repaired the old rowing boat."},
    {"speaker": "Tomas", "turn_id": "D1:2", "text": "Nice, Ines! I started a course on beekeeping.", "img_url": ["x"], "blip_caption": "a photo"},
    {"speaker": "Ines", "turn_id": "D1:3", "text": "  Bees! Tell me more next time.  "}
  ],
  "session_2_date_time": "6:40 pm on 21 April, 2023",
  "session_2": [
    {"speaker": "Tomas", "turn_id": "D2:1", "text": "The first hive is on the roof now."},
    {"speaker": "Ines", "turn_id": "D2:2", "text": "I rowed to the island with it."}
  ],
  "session_3_date_time": "1:00 pm on 1 May, 2023",
  "qa": [
    {"question": "What did Ines repair?", "answer": "a rowing boat", "evidence": ["D1:1"], "category": 4},
    {"question": "When did Tomas set up a hive?", "answer": "April 2023", "evidence": ["D2:01"], "category": 2},
    {"question": "What are the hobbies?", "answer": "x", "evidence": ["D1:1; D:1:2", "D2:2 D9:9"], "category": 1},
    {"question": "Would Ines like sailing?", "answer": "yes", "evidence": [], "category": 3},
    {"question": "What did Tomas paint?", "adversarial_answer": "a fence", "evidence": ["D1:2"], "category": 5},
    {"question": "Which boat?", "answer": "x", "evidence": ["D7:7"], "category": 4}
  ]
}`

func TestParseLoCoMo(t *testing.T) {
	c, err := ParseLoCoMo("locomo-x", []byte(locomoSample))
	if err != nil {
		t.Fatal(err)
	}
	if c.Scope != core.ScopeResource || !c.Restricted || !slices.Equal(c.QuestionTypes(), LoCoMoTypes) || c.Speakers != [2]string{"Ines", "Tomas"} {
		t.Fatalf("corpus %+v", c)
	}
	// A session without turns (session 3 has only a date) is no session.
	if len(c.Sessions) != 2 || c.Turns() != 5 {
		t.Fatalf("%d sessions, %d turns", len(c.Sessions), c.Turns())
	}
	t0 := c.Sessions[0].Turns[0]
	if t0.ID != "D1:1" || t0.Role != core.RoleUser || t0.Text != "Ines: Hi Tomas! I finally repaired the old rowing boat." ||
		!t0.At.Equal(time.Date(2023, 3, 3, 9, 15, 0, 0, time.UTC)) {
		t.Fatalf("first turn %+v", t0)
	}
	if tr := c.Sessions[0].Turns[1]; tr.Role != core.RoleAssistant || tr.Text != "Tomas: Nice, Ines! I started a course on beekeeping." {
		t.Fatalf("second speaker's turn %+v", tr)
	}
	if tr := c.Sessions[0].Turns[2]; tr.Text != "Ines: Bees! Tell me more next time." || tr.At.Sub(c.Sessions[0].Start) != 2*TurnGap {
		t.Fatalf("third turn %+v", tr)
	}
	if s := c.Sessions[1]; s.ID != "s02" || !s.Start.Equal(time.Date(2023, 4, 21, 18, 40, 0, 0, time.UTC)) {
		t.Fatalf("session 2 %+v", s)
	}
	// Category 5 and questions left without evidence are dropped; ids
	// are normalised and split, those naming no turn dropped.
	want := []Question{
		{N: 1, Type: CatSingleHop, Text: "What did Ines repair?", Evidence: []string{"D1:1"}},
		{N: 2, Type: CatTemporal, Text: "When did Tomas set up a hive?", Evidence: []string{"D2:1"}},
		{N: 3, Type: CatMultiHop, Text: "What are the hobbies?", Evidence: []string{"D1:1", "D1:2", "D2:2"}},
	}
	if len(c.Questions) != len(want) {
		t.Fatalf("questions %+v", c.Questions)
	}
	for i, q := range c.Questions {
		if q.N != want[i].N || q.Type != want[i].Type || q.Text != want[i].Text || !slices.Equal(q.Evidence, want[i].Evidence) {
			t.Errorf("question %d: %+v, want %+v", i, q, want[i])
		}
	}
	if c.Digest == "" {
		t.Error("no digest")
	}
	for name, doc := range map[string]string{
		"unknown speaker": withTurnIDKey(strings.Replace(locomoTemplate, `"speaker": "Tomas", "turn_id": "D2:1"`, `"speaker": "Tom", "turn_id": "D2:1"`, 1)),
		"bad date":        strings.Replace(locomoSample, "9:15 am on 3 March, 2023", "March 3rd", 1),
		"duplicate id":    withTurnIDKey(strings.Replace(locomoTemplate, `"turn_id": "D2:2"`, `"turn_id": "D2:1"`, 1)),
		"not json":        "{",
	} {
		if _, err := ParseLoCoMo("x", []byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNormEvidence(t *testing.T) {
	cases := map[string][]string{
		"D1:3":           {"D1:3"},
		"D:3:14":         {"D3:14"},
		"D7:09":          {"D7:9"},
		"D2:5; D4:1":     {"D2:5", "D4:1"},
		"D1:2 D1:3,D1:4": {"D1:2", "D1:3", "D1:4"},
		"junk":           {"junk"},
	}
	for in, want := range cases {
		if got := normEvidence(in); !slices.Equal(got, want) {
			t.Errorf("normEvidence(%q) = %q, want %q", in, got, want)
		}
	}
}

// The LoCoMo format through the harness with the hashing embedder: every
// session a thread of the resource, the questions asked across them.
func TestHarnessLoCoMoHashing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(locomoSample), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := LoadLoCoMo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Name != "locomo-x" {
		t.Fatalf("corpora %+v", cs)
	}
	ctx := context.Background()
	b, err := Open(ctx, t.TempDir(), cs[0], hashing.New(64), semantic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Options.Scope != core.ScopeResource {
		t.Fatalf("recorded with scope %q", b.Options.Scope)
	}
	for _, mode := range Modes {
		r, err := b.Evaluate(ctx, mode, semantic.Options{}, true)
		if err != nil {
			t.Fatal(err)
		}
		// Five turns: every evidence turn is among the first 5 (lexical
		// ranks only the turns sharing a word with the question, which
		// the third question's evidence does not).
		want := 1.0
		if mode == semantic.ModeLexical {
			want = 2.0 / 3
		}
		if r.Recall[5] != want || r.Recall[20] != want {
			t.Errorf("%s: recall %v, want %.3f", mode, r.Recall, want)
		}
		if r.Shown <= 0 || r.ShownTokens <= 0 {
			t.Errorf("%s: shown %.3f (%.0f tokens)", mode, r.Shown, r.ShownTokens)
		}
	}
	md := (&Report{Command: "test", Corpora: cs, Results: []*Result{}, Misses: nil}).Markdown()
	if !strings.Contains(md, "| locomo-x | 5 | 2 | 3 |") {
		t.Fatalf("report:\n%s", md)
	}
}

// The Restricted corpus's questions are named by number in the misses,
// never quoted.
func TestReportRestricted(t *testing.T) {
	c, err := ParseLoCoMo("locomo-x", []byte(locomoSample))
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Corpus: c.Name, Embedder: "e", Mode: semantic.ModeHybrid, Recall: map[int]float64{5: 0.5, 10: 0.5, 20: 1},
		ByType: map[string]map[int]float64{CatSingleHop: {5: 0.5, 10: 0.5, 20: 1}}, Types: c.QuestionTypes(), Restricted: true,
		Questions: []QuestionResult{{Question: c.Questions[0], Recall: map[int]float64{10: 0}}}}
	md := (&Report{Command: "test", Corpora: []*Corpus{c}, Results: []*Result{res}, Misses: []*Result{res}}).Markdown()
	if strings.Contains(md, c.Questions[0].Text) || !strings.Contains(md, "question 1 — evidence D1:1") {
		t.Fatalf("report quotes a restricted question:\n%s", md)
	}
	if !strings.Contains(md, "| locomo-x | e | hybrid | 0.500 / 0.500 / 1.000 (1) |") {
		t.Fatalf("per-type table:\n%s", md)
	}
}

// The folder of the shared LoCoMo conversations, when present: the
// three development conversations load with their known sizes.
func TestLoCoMoDev(t *testing.T) {
	dir := LoCoMoDir()
	if dir == "" || os.Getenv(LoCoMoEnv) != "" {
		t.Skip("no ../shared/data/locomo-dev (or another folder is set)")
	}
	cs, err := LoadLoCoMo(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	q := 0
	for _, c := range cs {
		got = append(got, c.Name)
		q += len(c.Questions)
		for _, qq := range c.Questions {
			if len(qq.Evidence) == 0 {
				t.Errorf("%s question %d has no evidence", c.Name, qq.N)
			}
		}
	}
	// README of locomo-dev: 383 questions of categories 1-4 with evidence.
	if !slices.Equal(got, []string{"locomo-26", "locomo-30", "locomo-41"}) || q != 383 {
		t.Fatalf("corpora %v, %d questions", got, q)
	}
}

// withTurnIDKey puts the format's key of a turn's id in a test template.
func withTurnIDKey(s string) string { return strings.ReplaceAll(s, `"turn_id"`, `"`+turnIDKey+`"`) }
