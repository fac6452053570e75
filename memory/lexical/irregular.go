package lexical

// irregular maps the past forms of common English irregular verbs (and a
// few irregular plurals) to their base form, which the stemmer then
// treats like any other word. A suffix stemmer cannot relate "bought" to
// "buy"; in a conversation log that gap is systematic, because questions
// about the past put the verb in its base form after "did" ("when did I
// buy the ring?") while the messages they ask about use the past tense
// ("I bought the ring!").
//
// Forms that are as often another word are left out: "saw", "found",
// "bit", "lit", "left" (the side), "rose" (the flower), "lives" and
// "leaves" (also present-tense verbs), "wound", "shot", "dove".
var irregular = map[string]string{
	"arose": "arise", "arisen": "arise", "awoke": "awake", "awoken": "awake",
	"became": "become", "began": "begin", "begun": "begin", "bent": "bend",
	"bled": "bleed", "blew": "blow", "blown": "blow",
	"broke": "break", "broken": "break", "bred": "breed", "brought": "bring",
	"built": "build", "burnt": "burn", "bought": "buy", "caught": "catch",
	"chose": "choose", "chosen": "choose", "clung": "cling", "came": "come",
	"crept": "creep", "dealt": "deal", "dug": "dig",
	"drew": "draw", "drawn": "draw", "dreamt": "dream", "drank": "drink",
	"drunk": "drink", "drove": "drive", "driven": "drive", "ate": "eat",
	"eaten": "eat", "fell": "fall", "fallen": "fall", "fed": "feed",
	"felt": "feel", "fought": "fight", "fled": "flee", "flew": "fly",
	"flown": "fly", "forbade": "forbid", "forgot": "forget", "forgotten": "forget",
	"forgave": "forgive", "forgiven": "forgive", "froze": "freeze", "frozen": "freeze",
	"got": "get", "gotten": "get", "gave": "give", "given": "give",
	"went": "go", "gone": "go", "grew": "grow", "grown": "grow",
	"hung": "hang", "heard": "hear", "hid": "hide", "hidden": "hide",
	"held": "hold", "kept": "keep", "knelt": "kneel", "knew": "know",
	"known": "know", "laid": "lay", "led": "lead", "leapt": "leap",
	"learnt": "learn", "lent": "lend", "lost": "lose",
	"made": "make", "meant": "mean", "met": "meet", "mistook": "mistake",
	"mistaken": "mistake", "overslept": "oversleep", "paid": "pay", "proven": "prove",
	"rode": "ride", "ridden": "ride", "rang": "ring", "rung": "ring",
	"risen": "rise", "ran": "run", "said": "say",
	"seen": "see", "sought": "seek", "sold": "sell", "sent": "send",
	"shook": "shake", "shaken": "shake", "shone": "shine",
	"showed": "show", "shown": "show", "shrank": "shrink", "shrunk": "shrink",
	"sang": "sing", "sung": "sing", "sank": "sink", "sunk": "sink",
	"sat": "sit", "slept": "sleep", "slid": "slide", "spoke": "speak",
	"spoken": "speak", "sped": "speed", "spent": "spend", "spun": "spin",
	"spat": "spit", "spoilt": "spoil", "sprang": "spring", "sprung": "spring",
	"stood": "stand", "stole": "steal", "stolen": "steal", "stuck": "stick",
	"stung": "sting", "stank": "stink", "strode": "stride", "struck": "strike",
	"strove": "strive", "swore": "swear", "sworn": "swear", "swept": "sweep",
	"swam": "swim", "swum": "swim", "swung": "swing", "took": "take",
	"taken": "take", "taught": "teach", "tore": "tear", "torn": "tear",
	"told": "tell", "thought": "think", "threw": "throw", "thrown": "throw",
	"understood": "understand", "undertook": "undertake",
	"woke": "wake", "woken": "wake", "wore": "wear", "worn": "wear",
	"wove": "weave", "woven": "weave", "wept": "weep", "won": "win",
	"withdrew": "withdraw", "wrote": "write", "written": "write",
	// Irregular plurals.
	"children": "child", "men": "man", "women": "woman", "feet": "foot",
	"teeth": "tooth", "mice": "mouse", "geese": "goose", "wives": "wife",
	"knives": "knife", "shelves": "shelf",
}
