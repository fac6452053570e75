package cli

import (
	"fmt"
	"strings"

	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/storage"
)

// notErased is what rm leaves of a thread's legacy data, and why.
type notErased struct {
	Thread    string `json:"thread"`
	Records   int    `json:"records"`
	StateKeys int    `json:"state_keys"`
	Reason    string `json:"reason"`
	Hint      string `json:"hint"`
}

// notErasedOf words environment's report of what a deletion leaves.
func notErasedOf(left []environment.ForgetLeft) []notErased {
	var out []notErased
	for _, l := range left {
		n := notErased{Thread: l.Thread, Records: l.Records, StateKeys: l.StateKeys, Reason: l.Reason}
		if l.Why == environment.LeftByOption {
			n.Reason = "--no-linked-threads leaves them"
		}
		n.Hint = fmt.Sprintf("check them (memctl ls -t %s), then erase them with: memctl rm --thread %s --legacy", shellQuote(l.Thread), shellQuote(l.Thread))
		out = append(out, n)
	}
	return out
}

// shellQuote quotes s for a command line an operator copies.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+=,%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// threadList names the threads for a message, the first few of them.
func threadList(threads []string) string {
	if len(threads) == 0 {
		return ""
	}
	const most = 5
	q := quoteAll(threads[:min(len(threads), most)])
	if len(threads) > most {
		q = append(q, fmt.Sprintf("and %d more", len(threads)-most))
	}
	return " (threads " + strings.Join(q, ", ") + ")"
}

// stateKeyJSON is a state key in memctl's JSON output.
type stateKeyJSON struct {
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id"`
	Layer   string `json:"layer"`
	Name    string `json:"name"`
}

func stateKeysJSON(keys []storage.Key) []stateKeyJSON {
	out := make([]stateKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = stateKeyJSON{Scope: k.Scope, ScopeID: k.ScopeID, Layer: k.Layer, Name: k.Name}
	}
	return out
}

// printStateKeys lists the dry run's state keys, in the state store loc,
// after its records.
func (a *app) printStateKeys(keys []storage.Key, loc string) error {
	if a.flags.json {
		for _, k := range stateKeysJSON(keys) {
			if err := writeJSON(a.io.Out, map[string]any{"state_key": k}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(keys) == 0 {
		return nil
	}
	fmt.Fprintf(a.io.Out, "\nState keys in %s:\n", esc(loc))
	rows := make([][]string, len(keys))
	for i, k := range keys {
		rows[i] = []string{cell(k.Scope), cell(k.ScopeID), cell(k.Layer), cell(k.Name)}
	}
	return fitTable(a.io.Out, a.width(), []column{{name: "SCOPE"}, {name: "SCOPE ID", min: 12}, {name: "LAYER", min: 10}, {name: "NAME", min: 12}}, rows)
}
