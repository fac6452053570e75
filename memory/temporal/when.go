package temporal

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownTime is wrapped by ParseWhen's errors: the phrase is not one
// the parser understands.
var ErrUnknownTime = errors.New("temporal: unrecognised time expression")

// TimeError reports a time phrase ParseWhen could not resolve.
type TimeError struct {
	Phrase string
	Reason string
}

func (e *TimeError) Error() string {
	return fmt.Sprintf("temporal: cannot resolve %q: %s (use e.g. yesterday, last Friday, two weeks ago, 2026-11-20, on November 20)", e.Phrase, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnknownTime) true.
func (e *TimeError) Unwrap() error { return ErrUnknownTime }

var (
	numberWords = map[string]int{
		"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
		"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2,
	}
	weekdays = map[string]int{ // ISO: Monday 0 .. Sunday 6
		"monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2,
		"thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4,
		"saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
	}
	months = map[string]time.Month{
		"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
		"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
		"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
		"december": 12, "dec": 12,
	}

	reAgo       = regexp.MustCompile(`^(\d+|[a-z]+|a couple of|couple of) (day|week|month|year)s? ago$`)
	reIn        = regexp.MustCompile(`^in (\d+|[a-z]+|a couple of|couple of) (day|week|month|year)s?$`)
	reFromNow   = regexp.MustCompile(`^(\d+|[a-z]+|a couple of|couple of) (day|week|month|year)s? from now$`)
	reRelDay    = regexp.MustCompile(`^(last|this|next|coming|past) ([a-z]+)$`)
	reISODate   = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	reMonthDay  = regexp.MustCompile(`^([a-z]+)\.? (?:the )?(\d{1,2})(?:st|nd|rd|th)?(?:,? (\d{4}))?$`)
	reDayMonth  = regexp.MustCompile(`^(?:the )?(\d{1,2})(?:st|nd|rd|th)? (?:of )?([a-z]+)\.?(?:,? (\d{4}))?$`)
	reMonthYear = regexp.MustCompile(`^(?:in )?([a-z]+)\.?(?: (\d{4}))?$`)
	prefixes    = []string{"as of ", "starting from ", "starting ", "effective ", "since ", "from ", "on ", "back on "}
)

// ParseWhen resolves a time phrase against ref, the time of the message
// that said it, with calendar days taken in loc (nil means UTC). Phrases
// that name a day resolve to the start of that day in loc, returned in
// UTC; "now" and RFC 3339 timestamps resolve to the instant. Case, extra
// spaces, a final period and a leading "on", "since", "from", "as of",
// "starting" or "effective" are ignored.
//
// Understood, with weeks starting on Monday (ISO 8601):
//
//	now, today, tonight, this morning/afternoon/evening
//	yesterday, last night, the day before yesterday
//	tomorrow, the day after tomorrow
//	N days/weeks/months/years ago     N is digits, a/an, one..twelve, a couple of
//	in N days/..., N days/... from now
//	last <weekday>    the most recent one strictly before today
//	this <weekday>    that day of the current week (past or future)
//	next <weekday>    the first one strictly after today ("coming" too)
//	last/this/next week, month, year   the first day of that period
//	2026-11-20, 2026-11-20T15:04:05Z
//	November 20, Nov 20th, 20 November, the 20th of November [, 2026]
//	November, in November 2026          the first of that month
//
// A month and day without a year is the occurrence nearest ref (within
// half a year, the earlier on a tie), so "on December 28" said on
// January 3 is last December. Months ago clamp to the month's last day
// (one month before March 31 is February 28 or 29). A bare weekday
// ("Friday") is refused as ambiguous: say last, this or next.
//
// Every result lies in years 1..9999 (UTC), the range a record's times can
// hold: a phrase resolving outside it ("November 0000", an RFC 3339 time
// in year 0, "tomorrow" on 9999-12-31) is refused with a *TimeError.
func ParseWhen(phrase string, ref time.Time, loc *time.Location) (time.Time, error) {
	t, err := parseWhen(phrase, ref, loc)
	if err != nil {
		return time.Time{}, err
	}
	if !inRange(t) {
		return time.Time{}, &TimeError{Phrase: phrase, Reason: "outside years 1..9999"}
	}
	return t, nil
}

// inRange reports whether t is in years 1..9999 in UTC, the times a
// vectorstore record holds.
func inRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

func parseWhen(phrase string, ref time.Time, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	p := normPhrase(phrase)
	fail := func(reason string) (time.Time, error) {
		return time.Time{}, &TimeError{Phrase: phrase, Reason: reason}
	}
	if p == "" {
		return fail("empty")
	}
	if len(p) > 64 {
		return fail("longer than 64 characters")
	}
	if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(p)); err == nil {
		return t.UTC(), nil
	}
	local := ref.In(loc)
	y, m, d := local.Date()
	day := func(y int, m time.Month, d int) (time.Time, error) {
		return time.Date(y, m, d, 0, 0, 0, 0, loc).UTC(), nil
	}
	switch p {
	case "now", "right now":
		return ref.UTC(), nil
	case "today", "tonight", "this morning", "this afternoon", "this evening":
		return day(y, m, d)
	case "yesterday", "last night", "yesterday morning", "yesterday afternoon", "yesterday evening":
		return day(y, m, d-1)
	case "the day before yesterday", "day before yesterday":
		return day(y, m, d-2)
	case "tomorrow", "tomorrow morning", "tomorrow afternoon", "tomorrow evening":
		return day(y, m, d+1)
	case "the day after tomorrow", "day after tomorrow":
		return day(y, m, d+2)
	}
	if mm := reAgo.FindStringSubmatch(p); mm != nil {
		n, ok := count(mm[1])
		if !ok {
			return fail("unknown number " + strconv.Quote(mm[1]))
		}
		return shift(y, m, d, mm[2], -n, loc)
	}
	for _, re := range []*regexp.Regexp{reIn, reFromNow} {
		if mm := re.FindStringSubmatch(p); mm != nil {
			n, ok := count(mm[1])
			if !ok {
				return fail("unknown number " + strconv.Quote(mm[1]))
			}
			return shift(y, m, d, mm[2], n, loc)
		}
	}
	if mm := reRelDay.FindStringSubmatch(p); mm != nil {
		which := mm[1]
		today := isoWeekday(local.Weekday())
		if wd, ok := weekdays[mm[2]]; ok {
			switch which {
			case "last", "past":
				k := (today - wd + 7) % 7
				if k == 0 {
					k = 7
				}
				return day(y, m, d-k)
			case "next", "coming":
				k := (wd - today + 7) % 7
				if k == 0 {
					k = 7
				}
				return day(y, m, d+k)
			default: // this
				return day(y, m, d-today+wd)
			}
		}
		step := map[string]int{"last": -1, "past": -1, "this": 0, "next": 1, "coming": 1}[which]
		switch mm[2] {
		case "week":
			return day(y, m, d-today+7*step)
		case "month":
			return day(y, m+time.Month(step), 1)
		case "year":
			return day(y+step, 1, 1)
		}
		return fail("unknown day or period " + strconv.Quote(mm[2]))
	}
	if mm := reISODate.FindStringSubmatch(p); mm != nil {
		yy, _ := strconv.Atoi(mm[1])
		mo, _ := strconv.Atoi(mm[2])
		dd, _ := strconv.Atoi(mm[3])
		if !validDate(yy, time.Month(mo), dd) {
			return fail("no such date")
		}
		return day(yy, time.Month(mo), dd)
	}
	var monthName, dayNum, yearNum string
	if mm := reMonthDay.FindStringSubmatch(p); mm != nil {
		monthName, dayNum, yearNum = mm[1], mm[2], mm[3]
	} else if mm := reDayMonth.FindStringSubmatch(p); mm != nil {
		monthName, dayNum, yearNum = mm[2], mm[1], mm[3]
	}
	if monthName != "" {
		mo, ok := months[monthName]
		if !ok {
			return fail("unknown month " + strconv.Quote(monthName))
		}
		dd, _ := strconv.Atoi(dayNum)
		if yearNum != "" {
			yy, _ := strconv.Atoi(yearNum)
			if !validDate(yy, mo, dd) {
				return fail("no such date")
			}
			return day(yy, mo, dd)
		}
		return nearest(local, mo, dd, loc, fail)
	}
	if mm := reMonthYear.FindStringSubmatch(p); mm != nil {
		if mo, ok := months[mm[1]]; ok {
			if mm[2] != "" {
				yy, _ := strconv.Atoi(mm[2])
				return day(yy, mo, 1)
			}
			return nearest(local, mo, 1, loc, fail)
		}
		if _, ok := weekdays[mm[1]]; ok {
			return fail("a bare weekday is ambiguous: say last, this or next " + mm[1])
		}
	}
	return fail("not a phrase the parser knows")
}

func normPhrase(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(strings.ReplaceAll(s, "\u2019", "'")), " "))
	s = strings.TrimRight(s, ".,;:!")
	for changed := true; changed; {
		changed = false
		for _, pre := range prefixes {
			if strings.HasPrefix(s, pre) {
				s = strings.TrimSpace(s[len(pre):])
				changed = true
			}
		}
	}
	return s
}

func count(s string) (int, bool) {
	if n, ok := numberWords[s]; ok {
		return n, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 100000 {
		return 0, false
	}
	return n, true
}

// isoWeekday numbers Monday 0 .. Sunday 6.
func isoWeekday(w time.Weekday) int { return (int(w) + 6) % 7 }

// shift moves the civil date (y, m, d) by n units; months and years clamp
// to the last day of the target month.
func shift(y int, m time.Month, d int, unit string, n int, loc *time.Location) (time.Time, error) {
	switch unit {
	case "day":
		d += n
	case "week":
		d += 7 * n
	case "month":
		y, m, d = addMonths(y, m, d, n)
	case "year":
		y, m, d = addMonths(y, m, d, 12*n)
	}
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, &TimeError{Phrase: unit, Reason: "outside years 1..9999"}
	}
	return t.UTC(), nil
}

func addMonths(y int, m time.Month, d, n int) (int, time.Month, int) {
	total := y*12 + int(m) - 1 + n
	ny, nm := total/12, time.Month(total%12+1)
	if total < 0 {
		ny, nm = (total-11)/12, time.Month((total%12+12)%12+1)
	}
	return ny, nm, min(d, daysIn(ny, nm))
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func validDate(y int, m time.Month, d int) bool {
	return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m)
}

// nearest picks the occurrence of month mo, day dd closest to local's
// date, the earlier one on a tie.
func nearest(local time.Time, mo time.Month, dd int, loc *time.Location, fail func(string) (time.Time, error)) (time.Time, error) {
	y, m, d := local.Date()
	today := civil(y, m, d)
	var best time.Time
	bestDist := int64(-1)
	for _, yy := range []int{y - 1, y, y + 1} {
		if !validDate(yy, mo, dd) {
			continue
		}
		c := civil(yy, mo, dd)
		dist := int64(c.Sub(today) / (24 * time.Hour))
		if dist < 0 {
			dist = -dist
		}
		if bestDist < 0 || dist < bestDist {
			best, bestDist = time.Date(yy, mo, dd, 0, 0, 0, 0, loc), dist
		}
	}
	if bestDist < 0 {
		return fail("no such date")
	}
	return best.UTC(), nil
}

// civil is a calendar date as a UTC noon instant: differences between two
// of them are whole days whatever the time zone's DST rules.
func civil(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 12, 0, 0, 0, time.UTC) }

// DaysBetween counts calendar days from a to b in loc (nil: UTC):
// positive when b is later.
func DaysBetween(a, b time.Time, loc *time.Location) int {
	if loc == nil {
		loc = time.UTC
	}
	ay, am, ad := a.In(loc).Date()
	by, bm, bd := b.In(loc).Date()
	return int(civil(by, bm, bd).Sub(civil(ay, am, ad)).Round(24*time.Hour) / (24 * time.Hour))
}

// Relative phrases the day of t as seen from now in loc, at day
// granularity: "today", "yesterday", "3 days ago", "2 weeks ago",
// "4 months ago", "2 years ago", "tomorrow", "in 5 days". It changes only
// when the calendar date of now changes, which is what lets an anchored
// block that uses it stay byte-identical through a day.
func Relative(t, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	days := DaysBetween(t, now, loc)
	future := days < 0
	if future {
		days = -days
	}
	var unit string
	var n int
	switch {
	case days == 0:
		return "today"
	case days == 1 && !future:
		return "yesterday"
	case days == 1:
		return "tomorrow"
	case days < 14:
		n, unit = days, "day"
	case days < 60:
		n, unit = days/7, "week"
	default:
		a, b := t.In(loc), now.In(loc)
		if future {
			a, b = b, a
		}
		months := (b.Year()-a.Year())*12 + int(b.Month()) - int(a.Month())
		if b.Day() < a.Day() {
			months--
		}
		if months < 24 {
			n, unit = months, "month"
		} else {
			n, unit = months/12, "year"
		}
	}
	s := strconv.Itoa(n) + " " + unit
	if n != 1 {
		s += "s"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}
