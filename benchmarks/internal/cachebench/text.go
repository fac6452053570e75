package cachebench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// gen produces the workloads' text: prose for messages and passages, Go-like
// source for files. It draws from fixed word lists with a seeded PCG, so a
// seed always yields the same bytes. The words are ordinary English and
// programming vocabulary so that a real BPE tokenizer counts them as it would
// count real conversation and code, which is what the cache figures rest on.
type gen struct{ r *rand.Rand }

func newGen(seed, stream uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, stream))} }

var (
	nouns = strings.Fields(`account invoice customer order payment refund ledger report
		schedule meeting deadline budget forecast contract vendor shipment warehouse
		request response service cluster database index query cache token session
		release branch commit review test build pipeline deploy config module package
		function handler parser buffer stream channel worker queue timeout retry limit
		policy rule permission role team project milestone ticket incident alert metric
		dashboard latency throughput migration schema table column record field value
		document summary draft proposal estimate quote region market product feature`)
	verbs = strings.Fields(`check update review confirm compute merge split validate
		retry schedule cancel approve reject migrate deploy rollback measure compare
		refactor rename document summarize verify archive restore export import send
		fetch parse render cache index resolve escalate assign close reopen track`)
	adjs = strings.Fields(`pending stale recent failed urgent optional missing duplicate
		quarterly monthly nightly primary secondary regional internal external legacy
		new current previous final partial complete slow fast large small critical`)
	names = strings.Fields(`Alice Bruno Chen Dana Elif Farid Greta Hiro Ines Jonas Kira
		Lena Mateo Nadia Omar Priya Quinn Rosa Sven Tariq Uma Victor Wen Xavier Yara Zoe`)
	orgs = strings.Fields(`Acme Borealis Cobalt Delta Ember Fjord Granite Helix Iris
		Juniper Keystone Lumen Meridian Nimbus Orchid Pinnacle Quartz Redwood Summit Tidal`)
	kinds  = []string{"person", "company", "project", "system", "document"}
	goType = []string{"int", "string", "bool", "float64", "error", "[]byte", "time.Duration", "*Config", "[]string", "map[string]int"}
)

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

// between returns a uniform int in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// chance is true with probability p.
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// sentence is n words of plausible prose ending with a period.
func (g *gen) sentence(n int) string {
	var b strings.Builder
	for i := range n {
		var w string
		switch i % 4 {
		case 0:
			w = g.pick(verbs)
		case 1:
			w = "the " + g.pick(adjs)
		case 2:
			w = g.pick(nouns)
		default:
			w = []string{"for", "with", "after", "before", "in", "and"}[g.r.IntN(6)]
		}
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteByte('.')
	return b.String()
}

// prose is about words words of sentences of 6 to 14 words.
func (g *gen) prose(words int) string {
	var parts []string
	for n := 0; n < words; {
		k := g.between(6, 14)
		parts = append(parts, g.sentence(k))
		n += k
	}
	return strings.Join(parts, " ")
}

// ident is a camelCase identifier of two or three words.
func (g *gen) ident() string {
	s := g.pick(verbs) + title(g.pick(nouns))
	if g.chance(0.4) {
		s += title(g.pick(nouns))
	}
	return s
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// statement is one line of Go-like code at the given indent.
func (g *gen) statement(indent string) string {
	a, b := g.pick(nouns), g.pick(nouns)
	switch g.r.IntN(6) {
	case 0:
		return fmt.Sprintf("%s%s := %s.%s(ctx, %s)", indent, a, b, title(g.ident()), g.pick(nouns))
	case 1:
		return fmt.Sprintf("%sif err := %s(%s); err != nil {\n%s\treturn fmt.Errorf(\"%s %s: %%w\", err)\n%s}", indent, g.ident(), a, indent, g.pick(verbs), b, indent)
	case 2:
		return fmt.Sprintf("%s%s.%s = %s.%s + %d", indent, a, title(b), a, title(g.pick(nouns)), g.between(1, 512))
	case 3:
		return fmt.Sprintf("%sfor _, %s := range %ss {\n%s\t%s(%s)\n%s}", indent, a, b, indent, g.ident(), a, indent)
	case 4:
		return fmt.Sprintf("%s// %s", indent, g.sentence(g.between(5, 10)))
	default:
		return fmt.Sprintf("%slog.Printf(\"%s %s: %%v\", %s)", indent, g.pick(verbs), g.pick(nouns), a)
	}
}

// function is a Go-like function of a few statements, as lines.
func (g *gen) function() []string {
	name := g.ident()
	lines := []string{
		fmt.Sprintf("// %s %s", name, strings.ToLower(g.sentence(g.between(6, 12)))),
		fmt.Sprintf("func %s(ctx context.Context, %s %s, %s %s) (%s, error) {", name, g.pick(nouns), g.pick(goType), g.pick(nouns), g.pick(goType), g.pick(goType)),
	}
	for range g.between(3, 7) {
		lines = append(lines, g.statement("\t"))
	}
	return append(lines, "\treturn "+g.pick(nouns)+", nil", "}", "")
}

// sourceFile is a Go-like file of about tokens tokens (o200k_base gives
// about 3.9 characters per token on this vocabulary).
func (g *gen) sourceFile(pkg string, tokens int) []string {
	lines := []string{"package " + pkg, "", "import (", "\t\"context\"", "\t\"fmt\"", "\t\"log\"", ")", ""}
	chars := 0
	for chars < tokens*39/10 {
		for _, l := range g.function() {
			lines = append(lines, l)
			chars += len(l) + 1
		}
	}
	return lines
}
