package entity

import (
	"encoding/json"
	"fmt"
	"github.com/stratamem/strata/memory/internal/layerkit"
	"math"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/stratamem/strata/memory/internal/jsonargs"
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
	switch {
	case len(list) == 0:
		return nil, argErrorf(`"entities" is empty: nothing to record`)
	case len(list) > MaxEntitiesPerCall:
		return nil, argErrorf("%d entities in one call, the limit is %d: split the update", len(list), MaxEntitiesPerCall)
	}
	out := make([]entityUpdate, 0, len(list))
	for i, item := range list {
		u, err := parseEntity(item)
		if err != nil {
			return nil, argErrorf("entities[%d]%v", i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// parseEntity validates one entry; its errors start with the field path
// after "entities[i]".
func parseEntity(raw json.RawMessage) (entityUpdate, error) {
	fields, err := jsonargs.Object(raw)
	if err != nil {
		return entityUpdate{}, fmt.Errorf(": must be an object with name, type and notes, %v", err)
	}
	if unknown := jsonargs.Unknown(fields, "name", "type", "notes", "note", "priority"); unknown != "" {
		return entityUpdate{}, fmt.Errorf(": unknown field %s (allowed: name, type, notes, note, priority)", unknown)
	}
	var u entityUpdate

	rawName, ok := fields["name"]
	if !ok || jsonargs.IsNull(rawName) {
		return u, fmt.Errorf(".name: missing")
	}
	var name string
	if err := jsonargs.String(rawName, &name); err != nil {
		return u, fmt.Errorf(".name: must be a string, got %s", jsonargs.Kind(rawName))
	}
	u.name = collapseSpaces(name)
	u.norm = NormalizeName(name)
	switch {
	case u.norm == "":
		return u, fmt.Errorf(".name: empty")
	case len(u.name) > MaxNameBytes:
		return u, fmt.Errorf(".name: %d bytes, the limit is %d", len(u.name), MaxNameBytes)
	}
	for _, r := range u.name {
		if unicode.IsControl(r) {
			return u, fmt.Errorf(".name: contains a control character")
		}
	}

	rawType, ok := fields["type"]
	if !ok || jsonargs.IsNull(rawType) {
		return u, fmt.Errorf(".type: missing (person, organization, place, concept or other)")
	}
	var typ string
	if err := jsonargs.String(rawType, &typ); err != nil {
		return u, fmt.Errorf(".type: must be a string, got %s", jsonargs.Kind(rawType))
	}
	if u.typ, ok = ParseType(typ); !ok {
		return u, fmt.Errorf(".type: unknown type %q: use person, organization, place, concept or other", typ)
	}

	var notes []string
	if rawNotes, ok := fields["notes"]; ok && !jsonargs.IsNull(rawNotes) {
		switch jsonargs.Kind(rawNotes) {
		case "a string": // the spec's form: one string
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
	if len(notes) > MaxNotesPerEntity {
		return u, fmt.Errorf(".notes: %d notes, the limit is %d per entity and call", len(notes), MaxNotesPerEntity)
	}
	for j, n := range notes {
		if len(n) > MaxNoteBytes {
			return u, fmt.Errorf(".notes[%d]: the note is %d bytes, the limit is %d", j, len(n), MaxNoteBytes)
		}
		if strings.IndexByte(n, 0) >= 0 {
			return u, fmt.Errorf(".notes[%d]: contains a NUL character", j)
		}
		u.notes = append(u.notes, splitNote(n)...)
	}

	if rawPrio, ok := fields["priority"]; ok && !jsonargs.IsNull(rawPrio) {
		var f float64
		if jsonargs.Kind(rawPrio) != "a number" || json.Unmarshal(rawPrio, &f) != nil {
			return u, fmt.Errorf(".priority: must be a whole number from 0 to %d, got %s", MaxPriority, jsonargs.Kind(rawPrio))
		}
		if f != math.Trunc(f) || f < 0 || f > MaxPriority {
			return u, fmt.Errorf(".priority: must be a whole number from 0 to %d, got %s", MaxPriority, strconv.FormatFloat(f, 'g', -1, 64))
		}
		p := int(f)
		u.priority = &p
	}
	return u, nil
}
