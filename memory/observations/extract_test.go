package observations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/observations"
)

func TestRules(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"I'm allergic to peanuts and I work at Acme.", []string{"User is allergic to peanuts", "User works at Acme"}},
		{"My name is Anna Berg. I live in Lyon; I'm a nurse!", []string{"User's name is Anna Berg", "User lives in Lyon", "User is a nurse"}},
		{"Well, actually I really like green tea, but I don't drink coffee", []string{"User likes green tea", "User does not drink coffee"}},
		{"My favourite colour is blue and my wife is called Mia", []string{"User's favourite colour is blue", "User's wife is called Mia"}},
		{"I usually cycle to work. I never eat meat.", []string{"User usually cycles to work", "User never eats meat"}},
		{"I have two kids and I'm 34 years old", []string{"User has two kids", "User is 34 years old"}},
		{"I’m vegetarian since college", []string{"User is vegetarian since college"}},
		{"I love my job", []string{"User loves their job"}},
		{"I'm working for the city council now", []string{"User works for the city council now"}},
		{"I speak French and Italian", []string{"User speaks French and Italian"}},
		{"I can't eat gluten", []string{"User cannot eat gluten"}},
		{"Quick note: I'm vegan. Meeting at 10:30", []string{"User is vegan"}},
		// Not facts: questions, conversational "my X is", hedges, other roles.
		{"Do I like jazz? Am I allergic to anything?", nil},
		{"My question is whether this compiles", nil},
		{"I'm a bit lost here", nil},
		{"Can you help me with my code?", nil},
		{"I think so", nil},
	}
	for _, c := range cases {
		got, err := observations.Rules{}.Extract(context.Background(), []core.Item{core.UserMessage(c.in)})
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, o := range got {
			texts = append(texts, o.Text)
			if !slices.Equal(o.From, []int{0}) || o.Importance < 1 || o.Importance > 5 {
				t.Errorf("%q: observation %+v", c.in, o)
			}
		}
		if !slices.Equal(texts, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.in, texts, c.want)
		}
	}

	// Only user messages are read; duplicates within a batch collapse.
	items := []core.Item{
		core.AssistantMessage("I work at OpenAI."),
		core.UserMessage("I work at Acme."),
		core.FunctionCallOutput("c1", "I live in Paris"),
		core.UserMessage("As I said, I work at Acme"),
	}
	got, _ := observations.Rules{Subject: "The user"}.Extract(context.Background(), items)
	if len(got) != 1 || got[0].Text != "The user works at Acme" || !slices.Equal(got[0].From, []int{1}) {
		t.Errorf("batch: %+v", got)
	}
}

// A "my ... is" whose subject is only spaces the pattern's \s does not take
// (a no-break space, or several spaces) is no fact; it panicked, and in a
// session the panic dropped the turn's other facts with it.
func TestRulesWhitespaceOnlySubject(t *testing.T) {
	for _, in := range []string{"my \u00a0 is blue", "my    is blue", "My \u2003\u00a0 are here"} {
		got, err := observations.Rules{}.Extract(context.Background(), []core.Item{core.UserMessage(in)})
		if err != nil || len(got) != 0 {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	// Spaces around the subject's words are collapsed.
	got, _ := observations.Rules{}.Extract(context.Background(), []core.Item{core.UserMessage("my \u00a0favourite colour is blue")})
	if len(got) != 1 || got[0].Text != "User's favourite colour is blue" {
		t.Errorf("collapsed subject: %+v", got)
	}
}
