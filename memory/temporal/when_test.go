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
