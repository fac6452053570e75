package entity

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/stratamem/strata/memory/internal/jsonargs"
	"github.com/stratamem/strata/memory/internal/layerkit"
)

// argErrorf words a rejection for the model; it matches ErrInvalidUpdate.
func argErrorf(format string, a ...any) error { return jsonargs.Errorf(ErrInvalidUpdate, format, a...) }

const usage = `use {"entities": [{"name": "...", "type": "person", "notes": ["..."]}]}`

// NormalizeName is the form names are compared in: NFKC, case-folded,
// trimmed, with runs of white space collapsed to one space.
func NormalizeName(s string) string {
	// A Caser keeps state, so each call makes its own.
	return collapseSpaces(cases.Fold().String(norm.NFKC.String(s)))
}

func collapseSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }

// noteKey is the form notes are deduplicated in: normalised like a name,
// without a final full stop.
func noteKey(n string) string {
	return strings.TrimSpace(strings.TrimRight(NormalizeName(n), "."))
}

// splitNote collapses a note's spaces and splits it where the record text
// would ("; "), dropping empty pieces.
func splitNote(s string) []string {
	var out []string
	for _, p := range strings.Split(collapseSpaces(s), noteSep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// entityUpdate is one validated entry of an update.
type entityUpdate struct {
	name     string // display form: spaces collapsed
	norm     string
	typ      Type
	notes    []string
	priority *int
}

// parseUpdate decodes and validates an update's arguments. Its errors say
// what to fix, in words fit for the model.
func parseUpdate(raw string) ([]entityUpdate, error) {
	fields, err := jsonargs.Fields(raw, MaxArgumentBytes, usage, ErrInvalidUpdate, "entities")
	if err != nil {
		return nil, err
	}
	if err := layerkit.CheckArguments(raw); err != nil {
		return nil, argErrorf("%v", err)
	}
	rawList, ok := fields["entities"]
	if !ok || jsonargs.IsNull(rawList) {
		return nil, argErrorf(`"entities" is missing: %s`, usage)
	}
	var list []json.RawMessage
	if jsonargs.Kind(rawList) != "an array" || json.Unmarshal(rawList, &list) != nil {
		return nil, argErrorf(`"entities" must be an array of objects, got %s: %s`, jsonargs.Kind(rawList), usage)
	}
	return checkUpdate(len(list), func(i int) (entityUpdate, error) { return parseEntity(list[i]) })
}

// checkUpdate validates an update of n entities, entry(i) validating
// the i-th: the one path of the model's calls (parseUpdate) and of Put.
func checkUpdate(n int, entry func(i int) (entityUpdate, error)) ([]entityUpdate, error) {
	switch {
	case n == 0:
		return nil, argErrorf(`"entities" is empty: nothing to record`)
	case n > MaxEntitiesPerCall:
		return nil, argErrorf("%d entities in one call, the limit is %d: split the update", n, MaxEntitiesPerCall)
	}
	out := make([]entityUpdate, 0, n)
	for i := range n {
		u, err := entry(i)
		if err != nil {
			return nil, argErrorf("entities[%d]%v", i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// parseEntity decodes one entry and validates its fields as checkEntity
// does, in the same order; its errors start with the field path after
// "entities[i]".
func parseEntity(raw json.RawMessage) (entityUpdate, error) {
	fields, err := jsonargs.Object(raw)
	if err != nil {
		return entityUpdate{}, fmt.Errorf(": must be an object with name, type and notes, %v", err)
	}
	if unknown := jsonargs.Unknown(fields, "name", "type", "notes", "note", "priority"); unknown != "" {
		return entityUpdate{}, fmt.Errorf(": unknown field %s (allowed: name, type, notes, note, priority)", unknown)
	}
	var u entityUpdate

	name, err := requiredString(fields, "name", "missing")
	if err != nil {
		return u, err
	}
	if err := u.checkName(name); err != nil {
		return u, err
	}

	typ, err := requiredString(fields, "type", "missing (person, organization, place, concept or other)")
	if err != nil {
		return u, err
	}
	if err := u.checkType(typ); err != nil {
		return u, err
	}

	var notes []string
	if rawNotes, ok := fields["notes"]; ok && !jsonargs.IsNull(rawNotes) {
		switch jsonargs.Kind(rawNotes) {
		case "a string": // the plain call's form: one string
			var n string
			if err := jsonargs.String(rawNotes, &n); err != nil {
				return u, fmt.Errorf(".notes: %v", err)
			}
			notes = append(notes, n)
		case "an array":
			var items []json.RawMessage
			if err := json.Unmarshal(rawNotes, &items); err != nil {
				return u, fmt.Errorf(".notes: invalid JSON: %v", err)
			}
			for j, it := range items {
				var n string
				if err := jsonargs.String(it, &n); err != nil {
					return u, fmt.Errorf(".notes[%d]: must be a string, got %s", j, jsonargs.Kind(it))
				}
				notes = append(notes, n)
			}
		default:
			return u, fmt.Errorf(".notes: must be an array of strings (or one string), got %s", jsonargs.Kind(rawNotes))
		}
	}
	if rawNote, ok := fields["note"]; ok && !jsonargs.IsNull(rawNote) {
		var n string
		if err := jsonargs.String(rawNote, &n); err != nil {
			return u, fmt.Errorf(".note: must be a string, got %s", jsonargs.Kind(rawNote))
		}
		notes = append(notes, n)
	}
	if err := u.checkNotes(notes); err != nil {
		return u, err
	}

	if rawPrio, ok := fields["priority"]; ok && !jsonargs.IsNull(rawPrio) {
		var f float64
		if jsonargs.Kind(rawPrio) != "a number" || json.Unmarshal(rawPrio, &f) != nil {
			return u, badPriority(jsonargs.Kind(rawPrio))
		}
		if f != math.Trunc(f) || f < 0 || f > MaxPriority {
			return u, badPriority(strconv.FormatFloat(f, 'g', -1, 64))
		}
		p := int(f)
		if err := u.checkPriority(&p); err != nil {
			return u, err
		}
	}
	return u, nil
}

// checkEntity validates one entity of an update given as Go values (Put):
// the rules of an entry of the model's call, in parseEntity's order and
// words.
func checkEntity(name, typ string, notes []string, priority *int) (entityUpdate, error) {
	var u entityUpdate
	err := u.checkName(name)
	if err == nil {
		err = u.checkType(typ)
	}
	if err == nil {
		err = u.checkNotes(notes)
	}
	if err == nil {
		err = u.checkPriority(priority)
	}
	return u, err
}

// checkName sets the entry's name; its errors, like the other checks',
// start with the field path after "entities[i]".
func (u *entityUpdate) checkName(name string) error {
	// The model's arguments passed layerkit.CheckArguments already.
	if err := layerkit.CheckText(name); err != nil {
		return fmt.Errorf(".name: %v", err)
	}
	u.name = collapseSpaces(name)
	u.norm = NormalizeName(name)
	switch {
	case u.norm == "":
		return fmt.Errorf(".name: empty")
	case len(u.name) > MaxNameBytes:
		return fmt.Errorf(".name: %d bytes, the limit is %d", len(u.name), MaxNameBytes)
	}
	for _, r := range u.name {
		if unicode.IsControl(r) {
			return fmt.Errorf(".name: contains a control character")
		}
	}
	return nil
}

// checkType sets the entry's type.
func (u *entityUpdate) checkType(typ string) error {
	var ok bool
	if u.typ, ok = ParseType(typ); !ok {
		return fmt.Errorf(".type: unknown type %q: use person, organization, place, concept or other", typ)
	}
	return nil
}

// checkNotes sets the entry's notes.
func (u *entityUpdate) checkNotes(notes []string) error {
	if len(notes) > MaxNotesPerEntity {
		return fmt.Errorf(".notes: %d notes, the limit is %d per entity and call", len(notes), MaxNotesPerEntity)
	}
	for j, n := range notes {
		if len(n) > MaxNoteBytes {
			return fmt.Errorf(".notes[%d]: the note is %d bytes, the limit is %d", j, len(n), MaxNoteBytes)
		}
		if err := layerkit.CheckText(n); err != nil {
			return fmt.Errorf(".notes[%d]: %v", j, err)
		}
		u.notes = append(u.notes, splitNote(n)...)
	}
	return nil
}

// checkPriority sets the entry's priority, when given.
func (u *entityUpdate) checkPriority(priority *int) error {
	if priority == nil {
		return nil
	}
	if *priority < 0 || *priority > MaxPriority {
		return badPriority(strconv.Itoa(*priority))
	}
	p := *priority
	u.priority = &p
	return nil
}

func badPriority(got string) error {
	return fmt.Errorf(".priority: must be a whole number from 0 to %d, got %s", MaxPriority, got)
}

// requiredString reads the string field key of an entry; missing is the
// error's reason when the field is absent or null.
func requiredString(fields map[string]json.RawMessage, key, missing string) (string, error) {
	raw, ok := fields[key]
	if !ok || jsonargs.IsNull(raw) {
		return "", fmt.Errorf(".%s: %s", key, missing)
	}
	var v string
	if err := jsonargs.String(raw, &v); err != nil {
		return "", fmt.Errorf(".%s: must be a string, got %s", key, jsonargs.Kind(raw))
	}
	return v, nil
}
