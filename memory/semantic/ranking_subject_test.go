package semantic

import (
	"slices"
	"testing"
	"time"
)

func TestSpeakerLabel(t *testing.T) {
	cases := map[string]string{
		"Anna: I joined a choir.":          "Anna",
		"Dr. Lee: take two a day":          "Dr. Lee",
		"Mary Ann Smith: hello":            "Mary Ann Smith",
		"Zoë: ça va":                       "Zoë",
		"O'Neil: hi":                       "O'Neil",
		"anna: lower case is not a label":  "",
		"Note:no space after the colon":    "",
		"I told her: the ferry is at nine": "",
		"The plan: one two three four: go": "",
		"Ticket 42: closed":                "",
		"A very Long Label Of Words: x":    "",
		"":                                 "",
	}
	for text, want := range cases {
		if got := speakerLabel(text); got != want {
			t.Errorf("speakerLabel(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestNamedSpeakers(t *testing.T) {
	labels := map[string]int{"Samira": 9, "Theodore": 9, "Dr. Lee": 4, "Ivo": 5}
	cases := map[string][]string{
		"Where did Theodore go sailing?":         {"Theodore"},
		"What is Theodore's favourite tea?":      {"Theodore"},
		"How long has Sam played the cello":      {"Samira"},
		"What do Samira and Theodore both cook?": {"Samira", "Theodore"},
		"What did Dr. Lee prescribe?":            {"Dr. Lee"},
		"When did Ivo open the studio?":          {"Ivo"},
		"Where did theodore go sailing?":         nil, // names are capitalised
		"What did the theo singers sing?":        nil,
		"Did Iv call?":                           nil, // a short form needs three letters
		"What did Theodora say?":                 nil,
		"When is my dentist appointment?":        nil,
	}
	for q, want := range cases {
		if got := namedSpeakers(q, labels); !slices.Equal(got, want) {
			t.Errorf("namedSpeakers(%q) = %q, want %q", q, got, want)
		}
	}
	// A short form that begins two labels names neither.
	if got := namedSpeakers("What did Mar say?", map[string]int{"Marta": 3, "Marek": 3}); got != nil {
		t.Errorf("ambiguous short form: %q", got)
	}
}

func TestQuestionPeriods(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	day := func(y int, m time.Month, d int) period {
		t := time.Date(y, m, d, 0, 0, 0, 0, loc)
		return period{t, t.AddDate(0, 0, 1)}
	}
	month := func(y int, m time.Month) period {
		t := time.Date(y, m, 1, 0, 0, 0, 0, loc)
		return period{t, t.AddDate(0, 1, 0)}
	}
	year := func(y int) period {
		t := time.Date(y, 1, 1, 0, 0, 0, 0, loc)
		return period{t, t.AddDate(1, 0, 0)}
	}
	years := [2]int{2023, 2024}
	cases := map[string][]period{
		"What did Ivo cook on the evening of 2 March, 2024?":       {day(2024, time.March, 2)},
		"Who did Samira call on October 9, 2024?":                  {day(2024, time.October, 9)},
		"What happened on the 3rd of June 2024?":                   {day(2024, time.June, 3)},
		"What did I log on 2024-02-29?":                            {day(2024, time.February, 29)},
		"What did Theodore fix the week before April 15, 2024?":    {day(2024, time.April, 15)},
		"Which cello piece did Samira learn in October 2024?":      {month(2024, time.October)},
		"When did Ivo go sailing in June?":                         {month(2023, time.June), month(2024, time.June)},
		"How many times has Ivo baked bread in 2024?":              {year(2024)},
		"What did Anna paint on Sept. 12th, 2024?":                 {day(2024, time.September, 12)},
		"What may I have said about the garden?":                   nil, // "may" is not May
		"When did I start at Corvid?":                              nil,
		"What did I say on 31 June, 2024?":                         nil, // no such day
		"Which of the two plans, from March 2024 or 2024-01-05, ?": {day(2024, time.January, 5), month(2024, time.March)},
	}
	for q, want := range cases {
		got := questionPeriods(q, loc, func() [2]int { return years })
		if len(got) != len(want) {
			t.Errorf("questionPeriods(%q) = %v, want %v", q, got, want)
			continue
		}
		for i := range got {
			if !got[i].from.Equal(want[i].from) || !got[i].to.Equal(want[i].to) {
				t.Errorf("questionPeriods(%q)[%d] = %v, want %v", q, i, got[i], want[i])
			}
		}
	}
	p := day(2024, time.March, 2)
	if !p.has(time.Date(2024, 3, 1, 23, 30, 0, 0, time.UTC)) || p.has(time.Date(2024, 3, 2, 22, 0, 0, 0, time.UTC)) {
		t.Errorf("a day is the calendar day in the layer's location")
	}
}
