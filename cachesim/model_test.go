package cachesim

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// genReq is a generated request with the block names the reference models
// key on (they never see Hash, so the hash chain is checked too).
type genReq struct {
	at    time.Time
	model string
	names []string
	req   Request
}

// generate returns n requests drawn from a small vocabulary, so prefixes
// repeat and hits, misses, expiries and lookback misses all occur.
func generate(seed uint64, n int) []genReq {
	r := rand.New(rand.NewPCG(seed, 7))
	at := t0
	out := make([]genReq, 0, n)
	for range n {
		at = at.Add(time.Duration(r.IntN(420)) * time.Second) // 0..7 min
		model := []string{"claude-sonnet-4-5", "claude-3-5-haiku"}[r.IntN(4)/3]
		nb := 1 + r.IntN(40)
		var names []string
		var blocks []Block
		for i := range nb {
			// Early blocks vary rarely, later ones more often.
			v := r.IntN(1 + i/8)
			name := "b" + strconv.Itoa(i) + "v" + strconv.Itoa(v)
			tokens := 40 + (i*37+v*11)%300
			if i == 0 {
				tokens = 600 + 200*v
			}
			names = append(names, name)
			blocks = append(blocks, TextBlock(name, tokens))
		}
		// Up to 4 breakpoints, 1h ones first.
		nbp := r.IntN(5)
		n1h := r.IntN(nbp + 1)
		pos := r.Perm(nb)[:min(nbp, nb)]
		slices.Sort(pos)
		for k, p := range pos {
			ttl := TTL5m
			if k < n1h {
				ttl = TTL1h
			}
			blocks[p] = blocks[p].WithBreakpoint(ttl)
		}
		out = append(out, genReq{at: at, model: model, names: names, req: Request{At: at, Model: model, Blocks: blocks}})
	}
	return out
}

type refEntry struct {
	expires time.Time
	ttl     time.Duration
}

// refAnthropic is a brute-force restatement of the documented rules: every
// block position is checked against every breakpoint window, keys are the
// joined block names, nothing is ever swept.
type refAnthropic struct {
	m        map[string]refEntry
	min      func(string) int
	lookback int
}

func prefixKeys(g genReq) ([]string, []int) {
	keys := make([]string, len(g.names))
	cum := make([]int, len(g.names))
	var sb strings.Builder
	sb.WriteString(g.model)
	total := 0
	for i, name := range g.names {
		sb.WriteString("|" + name + ":" + strconv.Itoa(g.req.Blocks[i].Tokens))
		keys[i] = sb.String()
		total += g.req.Blocks[i].Tokens
		cum[i] = total
	}
	return keys, cum
}

func (r *refAnthropic) live(k string, at time.Time) bool {
	e, ok := r.m[k]
	return ok && !at.After(e.expires)
}

func (r *refAnthropic) send(g genReq) Usage {
	keys, cum := prefixKeys(g)
	var bps []int
	for i, b := range g.req.Blocks {
		if b.Breakpoint {
			bps = append(bps, i)
		}
	}
	readEnd := -1
	for i := range keys {
		for _, bp := range bps {
			if i >= bp-r.lookback && i <= bp && r.live(keys[i], g.at) {
				readEnd = i
			}
		}
	}
	var u Usage
	for j := 0; j <= readEnd; j++ {
		if r.live(keys[j], g.at) {
			e := r.m[keys[j]]
			if exp := g.at.Add(e.ttl); exp.After(e.expires) {
				e.expires = exp
			}
			r.m[keys[j]] = e
		}
	}
	if readEnd >= 0 {
		u.ReadTokens = cum[readEnd]
	}
	covered := u.ReadTokens
	for _, bp := range bps {
		if bp > readEnd && cum[bp] >= r.min(g.model) {
			ttl := g.req.Blocks[bp].TTL
			r.m[keys[bp]] = refEntry{g.at.Add(ttl.Duration()), ttl.Duration()}
			if ttl == TTL1h {
				u.Write1hTokens += cum[bp] - covered
			} else {
				u.Write5mTokens += cum[bp] - covered
			}
			covered = cum[bp]
		}
	}
	u.UncachedTokens = cum[len(cum)-1] - covered
	return u
}

type refOpenAI struct{ m map[string]time.Time }

func (r *refOpenAI) send(g genReq) Usage {
	keys, cum := prefixKeys(g)
	matched := 0
	for i := range keys {
		if exp, ok := r.m[keys[i]]; ok && !g.at.After(exp) && cum[i] >= 1024 {
			matched = cum[i]
		}
	}
	for i := range keys {
		if cum[i] >= 1024 {
			r.m[keys[i]] = g.at.Add(5 * time.Minute)
		}
	}
	var u Usage
	if matched >= 1024 {
		u.ReadTokens = 1024 + (matched-1024)/128*128
	}
	u.UncachedTokens = cum[len(cum)-1] - u.ReadTokens
	return u
}

func tokensOnly(u Usage) Usage {
	return Usage{ReadTokens: u.ReadTokens, Write5mTokens: u.Write5mTokens, Write1hTokens: u.Write1hTokens, UncachedTokens: u.UncachedTokens}
}

// TestAgainstReference runs long generated sequences (enough to trigger
// sweeps) through both simulators and the brute-force references.
func TestAgainstReference(t *testing.T) {
	for seed := range uint64(4) {
		reqs := generate(seed, 1500)
		a := newAnthropic(t, AnthropicOptions{MinCacheableTokens: map[string]int{"claude-3-5-haiku": 2048}})
		ra := &refAnthropic{m: map[string]refEntry{}, min: a.MinCacheableTokens, lookback: 20}
		o := newOpenAI(t, OpenAIOptions{})
		ro := &refOpenAI{m: map[string]time.Time{}}
		// Sweep small caches often, so that dropping expired entries is
		// checked against references that never drop anything.
		for _, st := range []*store{&a.st, &o.st} {
			st.floor, st.sweepAt = 16, 16
		}
		var ta, to Totals
		for i, g := range reqs {
			ua := send(t, a, g.at, g.model, g.req.Blocks...)
			if want := ra.send(g); tokensOnly(ua) != want {
				t.Fatalf("seed %d request %d: anthropic %+v, reference %+v", seed, i, tokensOnly(ua), want)
			}
			uo := send(t, o, g.at, g.model, g.req.Blocks...)
			if want := ro.send(g); tokensOnly(uo) != want {
				t.Fatalf("seed %d request %d: openai %+v, reference %+v", seed, i, tokensOnly(uo), want)
			}
			ta.Add(ua)
			to.Add(uo)
		}
		// The generator is meant to exercise every path; make sure it does.
		if ta.ReadTokens == 0 || ta.Write5mTokens == 0 || ta.Write1hTokens == 0 || ta.UncachedTokens == 0 || to.ReadTokens == 0 {
			t.Fatalf("seed %d: degenerate sequence: anthropic %+v openai %+v", seed, ta, to)
		}
		if a.st.sweeps < 10 || o.st.sweeps < 10 {
			t.Fatalf("seed %d: too few sweeps: anthropic %d, openai %d", seed, a.st.sweeps, o.st.sweeps)
		}
	}
}

func TestDeterminism(t *testing.T) {
	reqs := generate(42, 400)
	replay := func() (ua, uo []Usage) {
		a := newAnthropic(t, AnthropicOptions{})
		o := newOpenAI(t, OpenAIOptions{})
		for _, g := range reqs {
			ua = append(ua, send(t, a, g.at, g.model, g.req.Blocks...))
			uo = append(uo, send(t, o, g.at, g.model, g.req.Blocks...))
		}
		return ua, uo
	}
	a1, o1 := replay()
	a2, o2 := replay()
	for i := range reqs {
		if a1[i] != a2[i] || o1[i] != o2[i] {
			t.Fatalf("request %d differs between runs: %+v/%+v vs %+v/%+v", i, a1[i], o1[i], a2[i], o2[i])
		}
	}
}

func TestConcurrentSend(t *testing.T) {
	a := newAnthropic(t, AnthropicOptions{})
	req := []Block{bp(blk("system", 2000)), blk("user", 100)}
	var wg sync.WaitGroup
	usages := make([]Usage, 16)
	for i := range usages {
		wg.Go(func() {
			u, err := a.Send(Request{At: t0, Model: sonnet, Blocks: req})
			if err != nil {
				t.Error(err)
			}
			usages[i] = u
		})
	}
	wg.Wait()
	var tot Totals
	for _, u := range usages {
		tot.Add(u)
	}
	// Exactly one request wrote; the others read.
	want(t, "totals", tot.Usage, 15*2000, 2000, 0, 16*100)
}
