package semantic

import (
	"testing"

	"github.com/stratamem/strata/core"
)

func TestQuestionSpeaker(t *testing.T) {
	cases := map[string]core.Role{
		"What recipe did you give me for my first loaf?":           core.RoleAssistant,
		"What book did you recommend to learn Rust lifetimes?":     core.RoleAssistant,
		"Which hotel did you suggest in Porto?":                    core.RoleAssistant,
		"What was your advice about the landlord?":                 core.RoleAssistant,
		"Remind me of the tips you gave for proofing":              core.RoleAssistant,
		"What did I call my sourdough starter?":                    core.RoleUser,
		"When did I start at Corvid?":                              core.RoleUser,
		"Can you tell me where I parked the car?":                  core.RoleUser,
		"Could you give me the name of my dentist?":                core.RoleUser,
		"What did I tell you I thought about the flat?":            core.RoleUser,
		"Do you remember my sister's birthday?":                    core.RoleUser,
		"Thank you! Which train did I book?":                       core.RoleUser,
		"How much did the repair cost, as you estimated it?":       core.RoleAssistant,
		"what did you say about lifetimes in structs":              core.RoleAssistant,
		"Which of the flats did you think was better value for me": core.RoleAssistant,
		"Thank you for the tips! When did I move to Oslo?":         core.RoleUser,
		"Do you know the plan for the wedding?":                    core.RoleUser,
		"Do you think I should take the job?":                      core.RoleUser,
		"What was your last suggestion for the garden?":            core.RoleAssistant,
		"Which restaurant have you recommended before?":            core.RoleAssistant,
		"What did you say I should pack?":                          core.RoleAssistant,
		// A request's "you" does not hide a later "you said" (the skipped
		// match used to run over it).
		"Can you repeat what you said about the hotel?":                  core.RoleAssistant,
		"Could you recall what you suggested for dinner?":                core.RoleAssistant,
		"Can you remember what you recommended for my back pain?":        core.RoleAssistant,
		"Can you tell me what I said about my sister?":                   core.RoleUser,
		"Could you remind me what I told you about the flat?":            core.RoleUser,
		"what was your take on my plan?":                                 core.RoleAssistant,
		"What were your thoughts on my essay?":                           core.RoleAssistant,
		"What'd you suggest for my trip?":                                core.RoleAssistant,
		"Where’d you say the museum was?":                                core.RoleAssistant,
		"What'd I say about the museum?":                                 core.RoleUser,
		"Thank you for the tips you gave, what was the first one?":       core.RoleAssistant,
		"Thank you! Could you tell me what my sister's name is, please?": core.RoleUser,
	}
	for q, want := range cases {
		if got := questionSpeaker(q); got != want {
			t.Errorf("questionSpeaker(%q) = %s, want %s", q, got, want)
		}
	}
}
