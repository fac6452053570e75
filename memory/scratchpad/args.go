package scratchpad

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/stratamem/strata/memory/internal/jsonargs"
	"github.com/stratamem/strata/memory/internal/layerkit"
)

// argErrorf words a rejection for the model; it matches ErrInvalidUpdate.
func argErrorf(format string, a ...any) error { return jsonargs.Errorf(ErrInvalidUpdate, format, a...) }

const usage = `use {"set": {"key": "value"}, "delete": ["key"]}`

// parseUpdate decodes and validates the arguments of an update. Its errors
// say what to fix, in words fit for the model.
func parseUpdate(raw string) (update, error) {
	fields, err := jsonargs.Fields(raw, MaxArgumentBytes, usage, ErrInvalidUpdate, "set", "delete")
	if err != nil {
		return update{}, err
	}
	if err := layerkit.CheckArguments(raw); err != nil {
		return update{}, argErrorf("%v", err)
	}
	u := update{set: map[string]string{}}
	if rawSet, ok := fields["set"]; ok && !jsonargs.IsNull(rawSet) {
		entries, err := jsonargs.Object(rawSet)
		if err != nil {
			return update{}, argErrorf(`"set" must be an object of keys to string values: %s`, usage)
		}
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			key, err := checkKey(k)
			if err != nil {
				return update{}, argErrorf("set: %v", err)
			}
			var v string
			if err := jsonargs.String(entries[k], &v); err != nil {
				return update{}, argErrorf("set[%q]: the value must be a string, got %s", k, jsonargs.Kind(entries[k]))
			}
			if len(v) > MaxValueBytes {
				return update{}, argErrorf("set[%q]: the value is %d bytes, the limit is %d", k, len(v), MaxValueBytes)
			}
			if strings.IndexByte(v, 0) >= 0 {
				return update{}, argErrorf("set[%q]: the value contains a NUL character", k)
			}
			if _, dup := u.set[key]; dup {
				return update{}, argErrorf("set: key %q is given twice", key)
			}
			u.set[key] = v
		}
	}
	if rawDel, ok := fields["delete"]; ok && !jsonargs.IsNull(rawDel) {
		var items []json.RawMessage
		if jsonargs.Kind(rawDel) != "an array" || json.Unmarshal(rawDel, &items) != nil {
			return update{}, argErrorf(`"delete" must be an array of keys (strings), got %s`, jsonargs.Kind(rawDel))
		}
		seen := map[string]bool{}
		for i, it := range items {
			var k string
			if err := jsonargs.String(it, &k); err != nil {
				return update{}, argErrorf("delete[%d]: must be a string, got %s", i, jsonargs.Kind(it))
			}
			key, err := checkKey(k)
			if err != nil {
				return update{}, argErrorf("delete[%d]: %v", i, err)
			}
			if _, both := u.set[key]; both {
				return update{}, argErrorf("key %q is both set and deleted: do one or the other", key)
			}
			if !seen[key] {
				seen[key] = true
				u.del = append(u.del, key)
			}
		}
		sort.Strings(u.del)
	}
	n := len(u.set) + len(u.del)
	if n == 0 {
		return update{}, argErrorf("nothing to do: %s", usage)
	}
	if n > MaxKeysPerCall {
		return update{}, argErrorf("%d keys in one call, the limit is %d: split the update", n, MaxKeysPerCall)
	}
	return u, nil
}

// checkKey trims k and checks it is a usable key.
func checkKey(k string) (string, error) {
	key := strings.TrimSpace(k)
	switch {
	case key == "":
		return "", fmt.Errorf("empty key")
	case len(key) > MaxKeyBytes:
		return "", fmt.Errorf("key %.40q... is %d bytes, the limit is %d", key, len(key), MaxKeyBytes)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("key %q contains a control character (newline, tab...)", key)
		}
	}
	return key, nil
}
