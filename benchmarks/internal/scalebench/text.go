package scalebench

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// gen writes the conversations' text: one user chatting with an assistant
// about the things of a life (travel, health, work, money, a garden, a
// dog...), in sentences built from templates and fixed word lists with a
// seeded PCG, so a seed always yields the same bytes. No external data is
// read. Words are drawn with a skew (a few common, many rare), and messages
// carry the rare tokens real conversations do (names, places, numbers,
// times, order codes), so the BM25 index has realistic posting lists: a
// handful of long ones and a long tail.
type gen struct{ r *rand.Rand }

func newGen(seed uint64, key string) *gen {
	h := fnv.New64a()
	h.Write([]byte(key))
	return &gen{rand.New(rand.NewPCG(seed, h.Sum64()))}
}

// pick draws uniformly.
func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

// skew draws with a bias towards the start of the list (index i has
// probability about proportional to log((n+1)/(i+1))): the lists put their
// everyday words first.
func (g *gen) skew(list []string) string { return list[g.r.IntN(g.r.IntN(len(list))+1)] }

func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

type topic struct {
	name  string
	nouns []string
	verbs []string // past tense, for the user's reports
}

var topics = []topic{
	{"travel", strings.Fields("flight hotel passport train ticket luggage itinerary visa airport booking suitcase ferry hostel layover boarding gate museum beach tour rental car"), strings.Fields("booked cancelled changed confirmed packed missed upgraded reserved")},
	{"health", strings.Fields("dentist appointment doctor prescription allergy knee physio blood test vaccine clinic insurance migraine back pain checkup pharmacy inhaler"), strings.Fields("scheduled postponed started finished picked refilled skipped booked")},
	{"work", strings.Fields("meeting deadline project manager report presentation review promotion salary contract client proposal budget roadmap sprint release interview colleague offsite"), strings.Fields("sent finished presented submitted delayed approved drafted reviewed")},
	{"money", strings.Fields("rent mortgage savings invoice tax return budget loan credit card pension bill subscription refund bank account transfer expenses receipt"), strings.Fields("paid transferred filed cancelled opened closed checked saved")},
	{"garden", strings.Fields("tomatoes roses lawn compost hedge seeds greenhouse basil soil watering can shed fence apple tree raised bed slugs mulch hose"), strings.Fields("planted pruned watered harvested repotted mowed dug fertilised")},
	{"pets", strings.Fields("dog puppy vet walk leash kibble cat litter kitten collar grooming vaccination kennel tortoise aquarium treats harness"), strings.Fields("adopted walked fed groomed trained vaccinated bathed registered")},
	{"cooking", strings.Fields("recipe risotto curry sourdough oven pan dinner party lasagna soup spices pastry marinade grill dessert lentils stew noodles"), strings.Fields("cooked baked tried burned prepared roasted marinated served")},
	{"home", strings.Fields("kitchen bathroom plumber boiler roof window paint carpet sofa landlord heating leak electrician shelves curtains lightbulb dishwasher"), strings.Fields("repaired painted replaced fixed cleaned ordered installed measured")},
	{"family", strings.Fields("sister brother mother father grandma cousin wedding birthday anniversary nephew niece parents reunion christening babysitter"), strings.Fields("visited called invited met hosted surprised helped celebrated")},
	{"fitness", strings.Fields("run marathon gym yoga swim bike squat training plan stretch race trainers pace interval climbing rowing weights"), strings.Fields("ran swam lifted cycled stretched trained entered finished")},
	{"learning", strings.Fields("course exam lecture spanish lesson guitar piano homework essay tutor certificate library thesis vocabulary grammar textbook"), strings.Fields("studied passed failed practised enrolled read wrote revised")},
	{"car", strings.Fields("tyre service oil change insurance parking ticket garage mechanic brakes battery registration fuel windscreen clutch"), strings.Fields("serviced parked fuelled towed inspected crashed washed sold")},
	{"shopping", strings.Fields("order delivery parcel jacket shoes laptop headphones return voucher discount sale receipt size colour warranty"), strings.Fields("ordered returned bought exchanged received tracked wrapped kept")},
	{"events", strings.Fields("concert festival theatre tickets gig exhibition match stadium cinema premiere comedy show opera gallery"), strings.Fields("attended booked missed watched queued enjoyed left organised")},
	{"tech", strings.Fields("phone laptop router password backup update printer screen keyboard charger cloud storage email account app"), strings.Fields("reset updated backed installed broke replaced configured synced")},
}

var (
	firstNames = strings.Fields(`Anna Ben Clara David Elena Felix Grace Hugo Iris Jack Kate Leo Mia Noah Olga Paul Rosa Sam Tara Uwe
		Vera Will Xena Yusuf Zara Amir Bea Caleb Dora Emil Farah Gil Hana Ivan Jonas Kemal Lina Marco Nina Oscar Pia Quinn Rafael
		Sofia Tomas Ulla Vik Wanda Yann Zeno Aiko Bruno Chiara Dmitri Esme Fionn Greta Henrik Ines Jorge Keiko Luca Maya Nils`)
	places = strings.Fields(`Lisbon Porto Madrid Seville Paris Lyon Berlin Munich Hamburg Vienna Prague Krakow Rome Milan Naples
		Athens Dublin Edinburgh London Bristol Oslo Bergen Stockholm Helsinki Copenhagen Amsterdam Utrecht Brussels Zurich Geneva
		Boston Chicago Toronto Montreal Denver Austin Seattle Tokyo Kyoto Osaka Seoul Hanoi Bangkok Sydney Auckland Lima Quito`)
	weekdays = strings.Fields("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
	months   = strings.Fields("January February March April May June July August September October November December")
	adjs     = strings.Fields(`new old big small cheap expensive early late quick long busy quiet annoying lovely strange great
		tricky tiring fun stressful relaxing noisy sunny rainy crowded empty broken perfect decent awful`)
	common = strings.Fields(`really just also still maybe probably finally again already actually honestly basically
		today yesterday tomorrow tonight recently soon later earlier`)
	fillers = strings.Fields(`ok thanks great good to know sounds good perfect right sure noted cool`)
	advice  = strings.Fields(`check compare book confirm call email ask remind note write keep bring try avoid plan schedule`)
)

// pickTopic draws the conversation's main topic: a few topics dominate one
// user's life, as they do.
func (g *gen) pickTopic() topic { return topics[g.r.IntN(g.r.IntN(len(topics))+1)] }

// userMessage is one user turn of 1-3 sentences about t (sometimes about
// another topic: conversations drift).
func (g *gen) userMessage(t topic) string {
	var b []string
	n := g.between(1, 3)
	if g.chance(0.08) {
		return g.cap(g.pick(fillers)) + "."
	}
	for i := 0; i < n; i++ {
		tt := t
		if g.chance(0.15) {
			tt = g.pickTopic()
		}
		b = append(b, g.userSentence(tt))
	}
	return strings.Join(b, " ")
}

func (g *gen) userSentence(t topic) string {
	n1, n2 := g.skew(t.nouns), g.skew(t.nouns)
	switch g.r.IntN(9) {
	case 0:
		return fmt.Sprintf("I %s the %s for %s %s.", g.skew(t.verbs), n1, g.pick(weekdays), g.timeOfDay())
	case 1:
		return fmt.Sprintf("%s said the %s in %s was %s, %s.", g.pick(firstNames), n1, g.skew(places), g.skew(adjs), g.skew(common))
	case 2:
		return fmt.Sprintf("Can you remind me what I decided about the %s and the %s?", n1, n2)
	case 3:
		return fmt.Sprintf("We %s the %s with %s on the %d%s of %s, it cost about %d euros.", g.skew(t.verbs), n1, g.pick(firstNames), g.between(1, 28), "th", g.pick(months), g.between(5, 2500))
	case 4:
		return fmt.Sprintf("The %s is %s %s, should I %s the %s first?", n1, g.skew(common), g.skew(adjs), g.skew(advice), n2)
	case 5:
		return fmt.Sprintf("Order %d for the %s arrives %s, %s told me.", g.between(10000, 99999), n1, g.pick(weekdays), g.pick(firstNames))
	case 6:
		return fmt.Sprintf("My %s %s the %s last %s and it was %s.", g.pick([]string{"sister", "friend", "neighbour", "boss", "partner", "son", "daughter"}), g.skew(t.verbs), n1, g.pick(weekdays), g.skew(adjs))
	case 7:
		return fmt.Sprintf("I am %s about the %s, %s.", g.pick([]string{"worried", "excited", "unsure", "happy", "annoyed", "curious"}), n1, g.pick([]string{"any ideas", "what do you think", "be honest", "help me plan"}))
	default:
		return fmt.Sprintf("Note that the %s %s is at %d:%02d near %s.", n1, n2, g.between(7, 21), 5*g.r.IntN(12), g.skew(places))
	}
}

// assistantMessage is one reply of 2-4 sentences.
func (g *gen) assistantMessage(t topic) string {
	var b []string
	n1 := g.skew(t.nouns)
	b = append(b, g.pick([]string{"Got it.", "Noted.", "That sounds " + g.skew(adjs) + ".", "Understood.", "Good question."}))
	n := g.between(1, 3)
	for i := 0; i < n; i++ {
		n2 := g.skew(t.nouns)
		switch g.r.IntN(6) {
		case 0:
			b = append(b, fmt.Sprintf("You could %s the %s before %s, then %s the %s.", g.skew(advice), n1, g.pick(weekdays), g.skew(advice), n2))
		case 1:
			b = append(b, fmt.Sprintf("Earlier you mentioned the %s in %s; it may be worth asking %s again.", n2, g.skew(places), g.pick(firstNames)))
		case 2:
			b = append(b, fmt.Sprintf("A %s %s usually takes %d to %d days, so plan for %s.", g.skew(adjs), n2, g.between(1, 5), g.between(6, 21), g.pick(months)))
		case 3:
			b = append(b, fmt.Sprintf("I would %s the %s and keep the receipt for the %s.", g.skew(advice), n1, n2))
		case 4:
			b = append(b, fmt.Sprintf("If the %s is %s, %s it and %s the %s instead.", n2, g.skew(adjs), g.skew(advice), g.skew(advice), g.skew(t.nouns)))
		default:
			b = append(b, fmt.Sprintf("Shall I note the %s for %s at %d:%02d?", n2, g.pick(weekdays), g.between(7, 21), 15*g.r.IntN(4)))
		}
	}
	return strings.Join(b, " ")
}

// query is a search a host or the model would run over the user's history.
func (g *gen) query() string {
	t := g.pickTopic()
	n1, n2 := g.skew(t.nouns), g.skew(t.nouns)
	switch g.r.IntN(6) {
	case 0:
		return fmt.Sprintf("when was the %s %s", n1, g.skew(t.verbs))
	case 1:
		return fmt.Sprintf("what did %s say about the %s", g.pick(firstNames), n1)
	case 2:
		return fmt.Sprintf("%s %s %s", n1, n2, g.skew(places))
	case 3:
		return fmt.Sprintf("how much did the %s cost in %s", n1, g.pick(months))
	case 4:
		return fmt.Sprintf("what did you suggest for the %s", n1)
	default:
		return fmt.Sprintf("the %s %s on %s", g.skew(adjs), n1, g.pick(weekdays))
	}
}

func (g *gen) timeOfDay() string {
	return g.pick([]string{"morning", "afternoon", "evening", "next week", "the weekend", "at noon"})
}

func (g *gen) cap(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Queries returns n search queries, deterministic for seed.
func Queries(seed uint64, n int) []string {
	g := newGen(seed, "queries")
	out := make([]string, n)
	for i := range out {
		out[i] = g.query()
	}
	return out
}
