package temporal_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratamem/strata/memory/temporal"
)

func date(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseWhen(t *testing.T) {
	monday := at("2026-11-30T10:00:00Z") // a Monday
	sunday := at("2026-11-29T22:30:00Z") // the Sunday before: the week boundary
	cases := []struct {
		ref    time.Time
		phrase string
		want   string
	}{
		{monday, "today", "2026-11-30"},
		{monday, "This morning", "2026-11-30"},
		{monday, "yesterday", "2026-11-29"},
		{monday, "last night", "2026-11-29"},
		{monday, "the day before yesterday", "2026-11-28"},
		{monday, "tomorrow", "2026-12-01"},
		{monday, "the day after tomorrow", "2026-12-02"},
		{monday, "3 days ago", "2026-11-27"},
		{monday, "two weeks ago", "2026-11-16"},
		{monday, "a couple of days ago", "2026-11-28"},
		{monday, "a month ago", "2026-10-30"},
		{monday, "twelve months ago", "2025-11-30"},
		{monday, "1 year ago", "2025-11-30"},
		{monday, "in 3 days", "2026-12-03"},
		{monday, "2 weeks from now", "2026-12-14"},
		{monday, "last Friday", "2026-11-27"},
		{monday, "last monday", "2026-11-23"}, // today is Monday: the one before
		{monday, "this monday", "2026-11-30"},
		{monday, "next monday", "2026-12-07"},
		{monday, "this friday", "2026-12-04"},
		{monday, "next fri", "2026-12-04"},
		{monday, "this sunday", "2026-12-06"},
		{monday, "last week", "2026-11-23"},
		{monday, "this week", "2026-11-30"},
		{monday, "next week", "2026-12-07"},
		{monday, "last month", "2026-10-01"},
		{monday, "this month", "2026-11-01"},
		{monday, "next month", "2026-12-01"},
		{monday, "last year", "2025-01-01"},
		{monday, "next year", "2027-01-01"},
		{sunday, "last week", "2026-11-16"},
		{sunday, "this week", "2026-11-23"},
		{sunday, "next week", "2026-11-30"},
		{sunday, "last sunday", "2026-11-22"},
		{sunday, "this monday", "2026-11-23"},
		{sunday, "next monday", "2026-11-30"},
		{sunday, "last friday", "2026-11-27"},
		{sunday, "this saturday", "2026-11-28"},
		{sunday, "yesterday", "2026-11-28"},
		// Month arithmetic clamps to the month's end.
		{at("2026-03-31T08:00:00Z"), "one month ago", "2026-02-28"},
		{at("2024-03-31T08:00:00Z"), "one month ago", "2024-02-29"},
		{at("2028-02-29T08:00:00Z"), "a year ago", "2027-02-28"},
		// Across a year boundary (2027-01-02 is a Saturday).
		{at("2027-01-02T08:00:00Z"), "last week", "2026-12-21"},
		{at("2027-01-02T08:00:00Z"), "last month", "2026-12-01"},
		{at("2027-01-02T08:00:00Z"), "on December 28", "2026-12-28"},
		{at("2027-01-02T08:00:00Z"), "January 5", "2027-01-05"},
		// Dates.
		{monday, "2026-11-20", "2026-11-20"},
		{monday, "on November 20", "2026-11-20"},
		{monday, "On Nov 20th.", "2026-11-20"},
		{monday, "Nov 20th, 2025", "2025-11-20"},
		{monday, "20 November 2024", "2024-11-20"},
		{monday, "the 3rd of March", "2027-03-03"}, // nearest occurrence
		{monday, "since last Friday", "2026-11-27"},
		{monday, "as of yesterday", "2026-11-29"},
		{monday, "in September", "2026-09-01"},
		{monday, "March 2025", "2025-03-01"},
	}
	for _, c := range cases {
		got, err := temporal.ParseWhen(c.phrase, c.ref, nil)
		if err != nil {
			t.Errorf("%s %q: %v", c.ref.Format(time.RFC3339), c.phrase, err)
			continue
		}
		if !got.Equal(date(c.want)) {
			t.Errorf("%s %q = %s, want %s", c.ref.Format("Mon 2006-01-02"), c.phrase, got.Format(time.RFC3339), c.want)
		}
	}
}

func TestParseWhenLocationAndInstants(t *testing.T) {
	ny := time.FixedZone("UTC-5", -5*3600)
	ref := at("2026-12-01T03:00:00Z") // Monday 22:00 in UTC-5, already Tuesday in UTC
	for phrase, want := range map[string]string{
		"today":     "2026-11-30T05:00:00Z",
		"yesterday": "2026-11-29T05:00:00Z",
		"last week": "2026-11-23T05:00:00Z",
	} {
		got, err := temporal.ParseWhen(phrase, ref, ny)
		if err != nil || !got.Equal(at(want)) {
			t.Errorf("%q in UTC-5 = %v %v, want %s", phrase, got, err, want)
		}
	}
	if got, _ := temporal.ParseWhen("today", ref, nil); !got.Equal(date("2026-12-01")) {
		t.Errorf("today in UTC = %v", got)
	}
	if got, err := temporal.ParseWhen("now", ref, ny); err != nil || !got.Equal(ref) {
		t.Errorf("now = %v %v", got, err)
	}
	if got, err := temporal.ParseWhen("2026-11-20T15:04:05+02:00", ref, nil); err != nil || !got.Equal(at("2026-11-20T13:04:05Z")) {
		t.Errorf("timestamp = %v %v", got, err)
	}
}

func TestParseWhenRejects(t *testing.T) {
	ref := at("2026-11-30T10:00:00Z")
	for _, phrase := range []string{"", "  ", "friday", "on Friday", "blorp", "eleventy days ago", "2026-13-01",
		"2026-02-30", "February 30", "last fortnight", "soon", strings.Repeat("very ", 20) + "long ago"} {
		_, err := temporal.ParseWhen(phrase, ref, nil)
		var te *temporal.TimeError
		if !errors.Is(err, temporal.ErrUnknownTime) || !errors.As(err, &te) || te.Phrase != phrase {
			t.Errorf("%q: want a TimeError, got %v", phrase, err)
		}
	}
	_, err := temporal.ParseWhen("Friday", ref, nil)
	if err == nil || !strings.Contains(err.Error(), "say last, this or next") {
		t.Errorf("bare weekday: %v", err)
	}
}

// Results outside years 1..9999 (UTC), which a record cannot hold, are
// refused on every path: a month and year, a date, an RFC 3339 time, a
// relative phrase at either end of the range, and a start of day that
// falls before year 1 in UTC.
func TestParseWhenRefusesYearsOutsideRange(t *testing.T) {
	plus2 := time.FixedZone("UTC+2", 2*3600)
	cases := []struct {
		phrase string
		ref    time.Time
		loc    *time.Location
	}{
		{"November 0000", t0, nil},
		{"in November 0000", t0, nil},
		{"0000-01-01T00:00:00Z", t0, nil},
		{"0001-01-01T01:00:00+02:00", t0, nil},
		{"10 November 0000", t0, nil},
		{"0000-11-10", t0, nil},
		{"tomorrow", at("9999-12-31T12:00:00Z"), nil},
		{"next week", at("9999-12-30T12:00:00Z"), nil},
		{"yesterday", at("0001-01-01T12:00:00Z"), nil},
		{"today", at("0001-01-01T12:00:00Z"), plus2}, // 0000-12-31T22:00Z
		{"now", time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC), nil},
		{"January 0001", t0, plus2},
	}
	for _, c := range cases {
		got, err := temporal.ParseWhen(c.phrase, c.ref, c.loc)
		var te *temporal.TimeError
		if !errors.Is(err, temporal.ErrUnknownTime) || !errors.As(err, &te) || te.Phrase != c.phrase {
			t.Errorf("%q at %v: %v, %v; want refused as outside years 1..9999", c.phrase, c.ref, got, err)
		}
	}
	if _, err := temporal.ParseWhen("November 0000", t0, nil); err == nil || !strings.Contains(err.Error(), "outside years 1..9999") {
		t.Errorf("November 0000: %v", err)
	}
	for _, d := range []string{"0000-06-01", "0000-06-01T00:00:00Z", "9999-12-31T23:00:00-05:00"} {
		if got, err := temporal.AsOfInstant(d, t0, nil); !errors.Is(err, temporal.ErrUnknownTime) {
			t.Errorf("AsOfInstant(%q) = %v, %v", d, got, err)
		}
	}
	// The edges themselves are fine.
	for _, p := range []string{"0001-01-01", "January 0001", "9999-12-31", "9999-12-31T23:59:59.999999Z"} {
		if _, err := temporal.ParseWhen(p, t0, nil); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestRelative(t *testing.T) {
	now := at("2026-11-30T10:00:00Z")
	cases := map[string]string{
		"2026-11-30T00:00:00Z": "today",
		"2026-11-30T23:59:00Z": "today",
		"2026-11-29T23:59:00Z": "yesterday",
		"2026-11-27T12:00:00Z": "3 days ago",
		"2026-11-17T00:00:00Z": "13 days ago",
		"2026-11-16T00:00:00Z": "2 weeks ago",
		"2026-09-30T00:00:00Z": "2 months ago",
		"2025-12-01T00:00:00Z": "11 months ago",
		"2024-11-30T00:00:00Z": "2 years ago",
		"2026-12-01T00:00:00Z": "tomorrow",
		"2026-12-05T00:00:00Z": "in 5 days",
		"2027-02-28T00:00:00Z": "in 2 months",
	}
	for ts, want := range cases {
		if got := temporal.Relative(at(ts), now, nil); got != want {
			t.Errorf("Relative(%s) = %q, want %q", ts, got, want)
		}
	}
	// Day granularity: the phrase is the same all day long...
	for h := 0; h < 24; h++ {
		n := date("2026-11-30").Add(time.Duration(h) * time.Hour)
		if got := temporal.Relative(at("2026-11-27T08:00:00Z"), n, nil); got != "3 days ago" {
			t.Fatalf("at %v: %q", n, got)
		}
	}
	// ...and follows the calendar of the location.
	ny := time.FixedZone("UTC-5", -5*3600)
	if got := temporal.Relative(at("2026-11-30T04:00:00Z"), at("2026-11-30T06:00:00Z"), ny); got != "yesterday" {
		t.Errorf("UTC-5: %q", got)
	}
}
