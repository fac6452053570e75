package semantic

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/vectorstore"
)

// Fusion is how the hybrid mode combines the two rankings.
type Fusion string

// Fusions. The zero value is FusionScore.
const (
	// FusionScore adds the two scores, each first put on a scale that
	// means the same for every query (see Ranking). Unlike rank fusion
	// it keeps how far apart the candidates are: a message that matches
	// every word of the question is not pulled level with one that
	// shares a single common word because both rank first somewhere.
	FusionScore Fusion = "score"
	// FusionRRF is reciprocal-rank fusion: the sum over the two rankings
	// of 1/(RRFK + rank).
	FusionRRF Fusion = "rrf"
)

// Ranking tunes the ranking. Zero fields take the defaults given on each.
// The defaults were chosen on the union of the retrieval benchmark's
// corpora (benchmarks/internal/recallquality): its five hand-written corpora and
// three real conversations of the LoCoMo benchmark, never on one alone
// (seven more LoCoMo conversations are held out). Hand-written corpora
// reward the vector side (they are written to be paraphrased); real
// conversations reward words: the ranking tuned on the first alone fell
// below BM25 alone on the second.
//
// FusionScore puts the two scores on query-independent scales before
// adding them:
//
//   - lexical: the BM25 score divided by the score of an ideal message
//     holding each query term once at average length (the sum of the
//     terms' IDF), so 1 means "matches the whole question" however rare
//     or common its words are, and a message sharing one frequent word
//     stays near 0 even when it ranks first;
//   - vector: the similarity as a z-score among the Candidates nearest
//     messages, divided by 3 and floored at 0, so a match three standard
//     deviations above the crowd weighs like a full lexical match. Raw
//     cosine levels differ by model and by question; how far a message
//     stands out does not. The floor makes the vector side one-sided
//     evidence, like the lexical side (a message sharing no word scores
//     0, not less): it lifts the messages that stand out and does not
//     push down the rest. Below the crowd's mean the similarities of a
//     small offline model are noise, and on real conversations, where
//     every message is small talk between the same two people, a
//     negative score sank exact word matches (the lexical first hit to
//     rank 98) below messages that share nothing with the question.
//
// Then priors for what the question says about its answer (FusionScore
// only; rank fusion ignores them):
//
//   - SpeakerPrior for the messages of the speaker the question is about:
//     a person it names, when the messages carry speaker labels ("Anna:
//     ..." at their start, as in transcripts of conversations between
//     people; see namedSpeakers), else the user, or the assistant when it
//     asks what the assistant said (see questionSpeaker);
//   - DatePrior for the messages written in a period the question names
//     ("on 2 March, 2024", "in May 2024", "in June", "in 2024"; see
//     questionPeriods): the layer records when each message was written,
//     and a question that names a date asks about what was said then.
type Ranking struct {
	// Fusion combines the rankings in hybrid mode; "" means FusionScore.
	Fusion Fusion
	// DenseWeight is the share of the vector score in FusionScore, in
	// (0, 1); 0 means 0.3.
	DenseWeight float64
	// RRFK is the rank offset of FusionRRF; 0 means 60.
	RRFK float64
	// ContextWeight is the weight of the adjacent messages' words in a
	// message's lexical document (its own words weigh 1; the messages two
	// away weigh half as much as the adjacent ones), so a terse reply
	// ("booked it!") is found through the turns it answers. 0 means 0.5;
	// a negative value indexes each message alone.
	ContextWeight float64
	// DenseContext mixes the best adjacent message's similarity into a
	// message's vector score: (own + DenseContext*neighbour) /
	// (1 + DenseContext). Messages are embedded alone, because a short
	// message embedded with its neighbours is drowned by them; the
	// context enters at ranking time instead. 0 means 0.3; a negative
	// value ranks each message by its own similarity.
	DenseContext float64
	// K1 and B are the BM25 parameters; 0 means 1.2 and 0.75.
	K1, B float64
	// SpeakerPrior is added, in hybrid mode with FusionScore, to the fused
	// score of the messages of the speaker the question is about (see
	// Ranking). A question names a person in the third person ("Where did
	// Anna go sailing?") and that person states the facts asked about (96%
	// of the evidence of the LoCoMo questions naming one speaker); a
	// question to an agent is about its user, whose own messages state
	// the facts of their life (97% in the hand-written corpora), while the
	// assistant's replies echo their words and would otherwise take half
	// the places. The question is read by English phrasing and by names;
	// a question in another language counts as about the user. 0 means
	// 0.25; a negative value ranks every speaker alike.
	SpeakerPrior float64
	// DatePrior is added, in hybrid mode with FusionScore, to the fused
	// score of the messages written in a period the question names (see
	// Ranking), in Options.Location. English month names only. 0 means
	// 0.25; a negative value ignores dates.
	DatePrior float64
}

// zScale divides the vector z-score (see Ranking).
const zScale = 3

func (r Ranking) resolve(id string) (Ranking, error) {
	switch r.Fusion {
	case "":
		r.Fusion = FusionScore
	case FusionScore, FusionRRF:
	default:
		return r, configError(id, "Ranking.Fusion", "must be %q or %q, got %q", FusionScore, FusionRRF, r.Fusion)
	}
	if r.DenseWeight == 0 {
		r.DenseWeight = 0.3
	}
	if !(r.DenseWeight > 0 && r.DenseWeight < 1) {
		return r, configError(id, "Ranking.DenseWeight", "must be in (0, 1), got %v", r.DenseWeight)
	}
	if r.RRFK == 0 {
		r.RRFK = 60
	}
	if !(r.RRFK > 0) || math.IsInf(r.RRFK, 0) {
		return r, configError(id, "Ranking.RRFK", "must be a positive number, got %v", r.RRFK)
	}
	var err error
	if r.ContextWeight, err = weight(id, "Ranking.ContextWeight", r.ContextWeight, 0.5); err != nil {
		return r, err
	}
	if r.DenseContext, err = weight(id, "Ranking.DenseContext", r.DenseContext, 0.3); err != nil {
		return r, err
	}
	if r.SpeakerPrior, err = weight(id, "Ranking.SpeakerPrior", r.SpeakerPrior, 0.25); err != nil {
		return r, err
	}
	if r.DatePrior, err = weight(id, "Ranking.DatePrior", r.DatePrior, 0.25); err != nil {
		return r, err
	}
	if r.K1 == 0 {
		r.K1 = 1.2
	}
	if r.B == 0 {
		r.B = 0.75
	}
	if !(r.K1 > 0) || math.IsInf(r.K1, 0) {
		return r, configError(id, "Ranking.K1", "must be a positive number, got %v", r.K1)
	}
	if !(r.B > 0 && r.B <= 1) {
		return r, configError(id, "Ranking.B", "must be in (0, 1], got %v", r.B)
	}
	return r, nil
}

// weight resolves a weight option (the context weights, the speaker
// prior): 0 is the default, negative is off, at most 1.
func weight(id, field string, v, def float64) (float64, error) {
	switch {
	case v == 0:
		return def, nil
	case v < 0:
		return 0, nil
	case v > 1 || math.IsNaN(v):
		return 0, configError(id, field, "must be at most 1 (negative: off), got %v", v)
	}
	return v, nil
}

// document is the lexical document of t[i]: the message's terms at
// weight 1, the adjacent messages' at ContextWeight and those two away
// at half of it (the thread's latest message excepted, see isContext).
// Its terms are capped to what a store indexes: at most
// vectorstore.MaxTerms (the heaviest kept), each at most
// vectorstore.MaxTermBytes long.
func (l *Layer) document(t []*entry, i int) vectorstore.Terms {
	doc := map[string]float64{}
	add := func(e *entry, w float64) {
		for term, n := range l.bag(e) {
			doc[term] += n * w
		}
	}
	add(t[i], 1)
	w := l.o.Ranking.ContextWeight
	for d := 1; d <= contextSpan && w > 0; d++ {
		for _, j := range [2]int{i - d, i + d} {
			if isContext(t, j) {
				add(t[j], w)
			}
		}
		w /= 2
	}
	return capTerms(doc)
}

// bag is e's analysed text, computed once per entry.
func (l *Layer) bag(e *entry) map[string]float64 {
	if e.bag == nil {
		e.bag = l.an.Query(e.text)
	}
	return e.bag
}

// capTerms drops the terms a store does not index (too long) and keeps
// the vectorstore.MaxTerms heaviest (ties by term), as float32 weights.
func capTerms(m map[string]float64) vectorstore.Terms {
	keys := make([]string, 0, len(m))
	for t := range m {
		if len(t) <= vectorstore.MaxTermBytes && m[t] > 0 {
			keys = append(keys, t)
		}
	}
	if len(keys) > vectorstore.MaxTerms {
		slices.SortFunc(keys, func(a, b string) int {
			switch {
			case m[a] > m[b]:
				return -1
			case m[a] < m[b]:
				return 1
			}
			return strings.Compare(a, b)
		})
		keys = keys[:vectorstore.MaxTerms]
	}
	out := make(vectorstore.Terms, len(keys))
	for _, t := range keys {
		out[t] = float32(m[t])
	}
	return out
}

// fuse sets every candidate's score for mode. ideal is the BM25 score of
// an ideal match of the query; subj is what the question says about its
// answer.
func (l *Layer) fuse(list []*cand, mode Mode, ideal float64, C int, subj subject) {
	rk := &l.o.Ranking
	for _, c := range list {
		if ideal > 0 {
			c.nl = c.lex / ideal
		}
	}
	switch mode {
	case ModeLexical:
		for _, c := range list {
			c.score = c.lex
		}
		return
	case ModeDense:
		for _, c := range list {
			c.score = c.d
			c.nd = c.d
		}
		return
	}
	// The vector ranking over the candidates, by smoothed similarity.
	ranked := make([]*cand, 0, len(list))
	for _, c := range list {
		if c.cosOK {
			ranked = append(ranked, c)
		}
	}
	slices.SortFunc(ranked, byDesc(func(c *cand) float64 { return c.d }))
	ranked = ranked[:min(len(ranked), C)]
	if rk.Fusion == FusionRRF {
		for _, c := range list {
			c.score = 0
			if c.lexRank > 0 {
				c.score += 1 / (rk.RRFK + float64(c.lexRank))
			}
		}
		for i, c := range ranked {
			c.score += 1 / (rk.RRFK + float64(i+1))
		}
		return
	}
	// z-scores among the C nearest; a candidate without a vector (not
	// embedded yet) counts as the least similar of them.
	var sum, sq float64
	for _, c := range ranked {
		sum += c.d
		sq += c.d * c.d
	}
	n := float64(max(len(ranked), 1))
	mean := sum / n
	sd := math.Sqrt(max(sq/n-mean*mean, 0))
	floor := 0.0
	if len(ranked) > 0 {
		floor = ranked[len(ranked)-1].d
	}
	w := rk.DenseWeight
	for _, c := range list {
		d := floor
		if c.cosOK {
			d = c.d
		}
		c.nd = 0
		if sd > 1e-9 {
			// One-sided: see Ranking.
			c.nd = max((d-mean)/sd/zScale, 0)
		}
		c.score = w*c.nd + (1-w)*c.nl
		if subj.speaks(c.e) {
			c.score += rk.SpeakerPrior
		}
		if subj.during(c.e.created) {
			c.score += rk.DatePrior
		}
	}
}

// Questions about what the assistant said or did. Each pattern's first
// group is "you" or "your" and its second the words between it and the
// word of saying, advising or making.
var addressees = []*regexp.Regexp{
	// "your advice", "your last suggestion", "your take"
	regexp.MustCompile(`(?i)\b(your)((?:\s+[\w']+)?)\s+(advice|suggestions?|recommendations?|ideas?|tips?|plan|list|answer|opinion|estimate|draft|reply|proposal|explanation|take|thoughts)\b`),
	// "you suggested", "you've recommended", "you once told me"
	regexp.MustCompile(`(?i)\b(you|you've|you'd)((?:\s+[\w']+){0,3}?)\s+(said|suggested|recommended|told|mentioned|advised|proposed|explained|wrote|gave|listed|answered|replied|drafted|came up|pointed out|warned|thought|calculated|estimated)\b`),
	// "did you say", "what did you tell me", "what'd you suggest"
	regexp.MustCompile(`(?i)(?:\bdid|\w['’]d)\s+(you)((?:\s+[\w']+){0,2}?)\s+(say|suggest|recommend|tell|mention|advise|propose|explain|write|give|list|answer|reply|draft|come up|point out|warn|think|calculate|estimate)\b`),
}

// request is what makes "you" a request or thanks ("can you tell me ...",
// "thank you for the tips"), not a question about what the assistant said.
var request = regexp.MustCompile(`(?i)\b(can|could|would|will|please|thank)\s*$`)

// firstPerson matches the user's own words between "you" and the verb
// ("what did I tell you I thought"): the user's statement is asked about.
var firstPerson = regexp.MustCompile(`(?i)\b(i|i'd|i've|me|my)\b`)

// questionSpeaker is the role whose messages answer query, in a
// conversation between a user and an assistant: the assistant's when the
// question is about what the assistant said, else the user's. It reads
// English phrasing only.
func questionSpeaker(query string) core.Role {
	for _, re := range addressees {
		// After a match that does not count, search again from the end of
		// its "you", not of the match: in "Can you repeat what you said"
		// the skipped match runs from the request's "you" to "said" and
		// would hide the "you said" inside it (matches do not overlap).
		// Every pattern needs a space after its "you", so the text searched
		// next never starts inside a word.
		for from := 0; from < len(query); {
			m := re.FindStringSubmatchIndex(query[from:])
			if m == nil {
				break
			}
			you, gapLo, gapHi := from+m[2], from+m[4], from+m[5]
			if request.MatchString(query[:you]) || firstPerson.MatchString(query[gapLo:gapHi]) {
				from += m[3]
				continue
			}
			return core.RoleAssistant
		}
	}
	return core.RoleUser
}

// subject is what a question says about the messages that answer it
// (see Ranking): whose they are, and when they were written.
type subject struct {
	// speaker is the label of the person the question names ("" for
	// none); role, when speaker is "", the role the question is about
	// ("" for none).
	speaker string
	role    core.Role
	// periods are the calendar periods the question names.
	periods []period
}

// speaks reports whether e is a message of the question's speaker.
func (s subject) speaks(e *entry) bool {
	if s.speaker != "" {
		return speakerLabel(e.text) == s.speaker
	}
	return s.role != "" && e.role == s.role
}

// during reports whether t falls in a period the question names.
func (s subject) during(t time.Time) bool {
	for _, p := range s.periods {
		if p.has(t) {
			return true
		}
	}
	return false
}

// subject reads query: the person it names among the speakers of es (the
// candidates of the ranking and the thread's latest messages: the priors
// only ever move candidates, so their speakers and dates are the ones
// that matter), else (in a conversation without speaker labels) the role
// it is about; and the periods it names.
func (l *Layer) subject(query string, es []*entry) subject {
	var s subject
	rk := &l.o.Ranking
	if rk.SpeakerPrior <= 0 && rk.DatePrior <= 0 {
		return s
	}
	sc := scan(es)
	switch named := namedSpeakers(query, sc.labels); {
	case len(named) == 1:
		s.speaker = named[0]
	case len(named) > 1:
		// About several of the speakers: none is favoured.
	case 2*sc.labelled >= sc.n && len(sc.labels) >= 2:
		// A conversation between named people that names none of them:
		// which of them was recorded as the user says nothing of whom
		// the question is about.
	default:
		s.role = questionSpeaker(query)
	}
	if rk.DatePrior > 0 {
		s.periods = questionPeriods(query, l.o.Location, func() [2]int { return years(es, l.o.Location) })
	}
	return s
}

// minSpeakerMessages is how many messages must start with a label for it
// to count as a speaker's name, not a one-off "Note:".
const minSpeakerMessages = 3

// scopeScan is what subject needs to know of the scope's messages.
type scopeScan struct {
	// labels counts the messages each speaker label starts, for the
	// labels that start at least minSpeakerMessages; labelled is their
	// sum and n the number of messages.
	labels      map[string]int
	labelled, n int
}

// scan reads es for subject: one pass, a few comparisons per message.
func scan(es []*entry) scopeScan {
	all := map[string]int{}
	sc := scopeScan{labels: map[string]int{}}
	sc.n = len(es)
	for _, e := range es {
		if l := speakerLabel(e.text); l != "" {
			all[l]++
		}
	}
	for l, c := range all {
		if c >= minSpeakerMessages {
			sc.labels[l] = c
			sc.labelled += c
		}
	}
	return sc
}

// speakerLabel is the speaker label text starts with, or "": one to
// three capitalised words and a colon followed by a space ("Anna: ...",
// "Dr. Lee: ..."), each word at most 25 letters, apostrophes, periods or
// hyphens. It runs over every message of the scope at every query, so it
// reads the bytes itself instead of running a regular expression.
func speakerLabel(text string) string {
	words, n := 0, 0 // words seen, length of the current word
	for i, r := range text {
		switch {
		case r == ':':
			if n == 0 || i+1 >= len(text) || (text[i+1] != ' ' && text[i+1] != '\t' && text[i+1] != '\n') {
				return ""
			}
			return text[:i]
		case r == ' ':
			if n == 0 || words == 3 {
				return ""
			}
			n = 0
		case n == 0:
			if !unicode.IsUpper(r) {
				return ""
			}
			words++
			if words > 3 {
				return ""
			}
			n = 1
		case unicode.IsLetter(r) || unicode.IsMark(r) || r == '\'' || r == '’' || r == '.' || r == '-':
			if n++; n > 25 {
				return ""
			}
		default:
			return ""
		}
	}
	return ""
}

// nameWord is a capitalised word of a question, with capitalised parts
// joined by an apostrophe or a hyphen ("O'Neil", "Jean-Luc"); a
// possessive "'s" is not part of it.
var nameWord = regexp.MustCompile(`\p{Lu}[\p{L}\p{M}]*(?:['’-]\p{Lu}[\p{L}\p{M}]*)*`)

// namedSpeakers are the labels query names, sorted: a label named in
// full (as whole words), or by a short form of at least three letters
// that begins exactly one label ("Sam" for "Samira").
func namedSpeakers(query string, labels map[string]int) []string {
	if len(labels) == 0 {
		return nil
	}
	found := map[string]bool{}
	words := nameWord.FindAllStringIndex(query, -1)
	for l := range labels {
		// "Dr. Lee" is named by the words "Dr" and "Lee".
		lw := strings.Fields(strings.ReplaceAll(l, ".", " "))
		for i := 0; i+len(lw) <= len(words); i++ {
			ok := true
			for j, w := range lw {
				if query[words[i+j][0]:words[i+j][1]] != w {
					ok = false
					break
				}
			}
			if ok {
				found[l] = true
				break
			}
		}
	}
	for _, w := range words {
		word := query[w[0]:w[1]]
		if len([]rune(word)) < 3 || labels[word] > 0 {
			continue
		}
		var only string
		n := 0
		for l := range labels {
			if strings.HasPrefix(l, word) && !found[l] {
				only = l
				n++
			}
		}
		if n == 1 {
			found[only] = true
		}
	}
	if len(found) == 0 {
		return nil
	}
	out := make([]string, 0, len(found))
	for l := range found {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// period is a span of calendar time a question names: [from, to).
type period struct{ from, to time.Time }

func (p period) has(t time.Time) bool { return !t.Before(p.from) && t.Before(p.to) }

var monthNames = map[string]time.Month{}

func init() {
	for m := time.January; m <= time.December; m++ {
		n := strings.ToLower(m.String())
		monthNames[n] = m
		monthNames[n[:3]] = m
	}
	monthNames["sept"] = time.September
}

// monthPattern is an English month name, capitalised ("May", not "may"),
// in full or abbreviated.
const monthPattern = `(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?`

var (
	dayMonthYear = regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthPattern + `,?\s+(\d{4})\b`)
	monthDayYear = regexp.MustCompile(`\b` + monthPattern + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	isoDate      = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	monthYear    = regexp.MustCompile(`\b` + monthPattern + `,?\s+(\d{4})\b`)
	inMonth      = regexp.MustCompile(`\b(?i:in|during|since|of|early|late|mid|last|this)\s+(?:-\s*)?` + monthPattern + `\b`)
	inYear       = regexp.MustCompile(`\b(?i:in|during|of)\s+(\d{4})\b`)
)

// years are the first and last year of es, in loc.
func years(es []*entry, loc *time.Location) [2]int {
	ys := [2]int{math.MaxInt, math.MinInt}
	for _, e := range es {
		y := e.created.In(loc).Year()
		ys[0], ys[1] = min(ys[0], y), max(ys[1], y)
	}
	return ys
}

// questionPeriods are the calendar periods query names, in loc: a day
// ("on 2 March, 2024", "March 2nd, 2024", "2024-03-02"), a month ("in
// October 2024"; "in June" is June of every year from the first to the
// last of years(), called only then) or a year ("in 2023"). A question
// asks about a past period by date ("what did I say on 3 June?");
// periods relative to the question ("last week") are not read.
func questionPeriods(query string, loc *time.Location, years func() [2]int) []period {
	var out []period
	used := make([]bool, len(query))
	take := func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			if used[i] {
				return false
			}
		}
		for i := lo; i < hi; i++ {
			used[i] = true
		}
		return true
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	month := func(s string) time.Month { return monthNames[strings.ToLower(s)] }
	add := func(from time.Time, to time.Time) { out = append(out, period{from, to}) }
	day := func(y int, m time.Month, d int) {
		if m < time.January || m > time.December {
			return
		}
		// 31 June is not 1 July.
		if t := time.Date(y, m, d, 0, 0, 0, 0, loc); t.Day() == d {
			add(t, t.AddDate(0, 0, 1))
		}
	}
	for _, m := range dayMonthYear.FindAllStringSubmatchIndex(query, -1) {
		if take(m[0], m[1]) {
			day(num(query[m[6]:m[7]]), month(query[m[4]:m[5]]), num(query[m[2]:m[3]]))
		}
	}
	for _, m := range monthDayYear.FindAllStringSubmatchIndex(query, -1) {
		if take(m[0], m[1]) {
			day(num(query[m[6]:m[7]]), month(query[m[2]:m[3]]), num(query[m[4]:m[5]]))
		}
	}
	for _, m := range isoDate.FindAllStringSubmatchIndex(query, -1) {
		if take(m[0], m[1]) {
			day(num(query[m[2]:m[3]]), time.Month(num(query[m[4]:m[5]])), num(query[m[6]:m[7]]))
		}
	}
	for _, m := range monthYear.FindAllStringSubmatchIndex(query, -1) {
		if take(m[0], m[1]) {
			t := time.Date(num(query[m[4]:m[5]]), month(query[m[2]:m[3]]), 1, 0, 0, 0, 0, loc)
			add(t, t.AddDate(0, 1, 0))
		}
	}
	var ys *[2]int
	for _, m := range inMonth.FindAllStringSubmatchIndex(query, -1) {
		if take(m[2], m[3]) {
			if ys == nil {
				y := years()
				ys = &y
			}
			for y := ys[0]; y <= ys[1] && y < ys[0]+100; y++ {
				t := time.Date(y, month(query[m[2]:m[3]]), 1, 0, 0, 0, 0, loc)
				add(t, t.AddDate(0, 1, 0))
			}
		}
	}
	for _, m := range inYear.FindAllStringSubmatchIndex(query, -1) {
		if take(m[2], m[3]) {
			t := time.Date(num(query[m[2]:m[3]]), 1, 1, 0, 0, 0, 0, loc)
			add(t, t.AddDate(1, 0, 0))
		}
	}
	return out
}
