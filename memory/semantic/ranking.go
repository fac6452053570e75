package semantic

import (
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/lexical"
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
// The defaults were chosen on the development corpus of the retrieval
// benchmark (benchmarks/recallquality), never on its test corpus.
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
//     messages, divided by 3, so a match three standard deviations above
//     the crowd weighs like a full lexical match. Raw cosine levels
//     differ by model and by question; how far a message stands out does
//     not.
type Ranking struct {
	// Fusion combines the rankings in hybrid mode; "" means FusionScore.
	Fusion Fusion
	// DenseWeight is the share of the vector score in FusionScore, in
	// (0, 1); 0 means 0.5.
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
	// SpeakerPrior is added, in hybrid mode with FusionScore (rank fusion
	// ignores it), to the fused score of the messages of the speaker the
	// question is about: the user's own messages, or the assistant's when
	// the question asks what the assistant said ("what did you suggest",
	// "your advice on ..."; see questionSpeaker). Questions about a user's life are answered by
	// what the user told the agent; the assistant's replies around those
	// messages share their words and topic and otherwise take half the
	// places. The question is classified by English phrasing; a question
	// in another language counts as about the user. 0 means 0.07; a
	// negative value ranks both speakers alike.
	SpeakerPrior float64
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
		r.DenseWeight = 0.5
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
	if r.SpeakerPrior, err = weight(id, "Ranking.SpeakerPrior", r.SpeakerPrior, 0.07); err != nil {
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

// lexFields is the lexical document of t[i]: the message, the adjacent
// messages at ContextWeight and those two away at half of it (the
// thread's latest message excepted, see isContext).
func (l *Layer) lexFields(t []*entry, i int) []lexical.Field {
	fs := []lexical.Field{{Text: t[i].text, Weight: 1}}
	w := l.o.Ranking.ContextWeight
	for d := 1; d <= 2 && w > 0; d++ {
		for _, j := range [2]int{i - d, i + d} {
			if isContext(t, j) {
				fs = append(fs, lexical.Field{Text: t[j].text, Weight: w})
			}
		}
		w /= 2
	}
	return fs
}

// denseText is what is embedded for t[i]: the message alone (see
// Ranking.DenseContext for why).
func (l *Layer) denseText(t []*entry, i int) string { return t[i].text }

// fuse sets every candidate's score for mode. ideal is the BM25 score of
// an ideal match of the query.
func (l *Layer) fuse(list []*cand, mode Mode, ideal float64, C int, speaker core.Role) {
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
	slices.SortFunc(ranked, func(a, b *cand) int {
		switch {
		case a.d > b.d:
			return -1
		case a.d < b.d:
			return 1
		}
		return strings.Compare(a.e.id, b.e.id)
	})
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
			c.nd = (d - mean) / sd / zScale
		}
		c.score = w*c.nd + (1-w)*c.nl
		if c.e.role == speaker {
			c.score += rk.SpeakerPrior
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

// questionSpeaker is the role whose messages answer query: the
// assistant's when the question is about what the assistant said, else
// the user's. It reads English phrasing only.
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

// TODO(exp): remove. Experiment knobs for the ranking study.
var exp = map[string]float64{}

// SetExperiment sets the experiment knobs (temporary).
func SetExperiment(m map[string]float64) { exp = m }

func ex(k string, d float64) float64 {
	if v, ok := exp[k]; ok {
		return v
	}
	return d
}
