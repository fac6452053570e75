package scratchpad

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// argError is the message sent back to the model; it matches
// ErrInvalidUpdate.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }
func (e *argError) Unwrap() error { return ErrInvalidUpdate }

func argErrorf(format string, a ...any) error { return &argError{msg: fmt.Sprintf(format, a...)} }

const usage = `use {"set": {"key": "value"}, "delete": ["key"]}`

// parseUpdate decodes and validates the arguments of an update. Its errors
// say what to fix, in words fit for the model.
func parseUpdate(raw string) (update, error) {
	if len(raw) > MaxArgumentBytes {
		return update{}, argErrorf("arguments are %d bytes, the limit is %d", len(raw), MaxArgumentBytes)
	}
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	fields, err := decodeObject([]byte(raw))
	if err != nil {
		return update{}, argErrorf("arguments must be a JSON object (%v): %s", err, usage)
	}
	var unknown []string
	for name := range fields {
		if name != "set" && name != "delete" {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return update{}, argErrorf("unknown field %s: %s", strings.Join(unknown, ", "), usage)
	}
	u := update{set: map[string]string{}}
	if rawSet, ok := fields["set"]; ok && !isNull(rawSet) {
		entries, err := decodeObject(rawSet)
		if err != nil {
			return update{}, argErrorf(`"set" must be an object of keys to string values: %s`, usage)
		}
		for _, k := range sortedRawKeys(entries) {
			key, err := checkKey(k)
			if err != nil {
				return update{}, argErrorf("set: %v", err)
			}
			var v string
			if err := decodeString(entries[k], &v); err != nil {
				return update{}, argErrorf("set[%q]: the value must be a string, got %s", k, jsonKind(entries[k]))
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
	if rawDel, ok := fields["delete"]; ok && !isNull(rawDel) {
		var items []json.RawMessage
		if jsonKind(rawDel) != "an array" || json.Unmarshal(rawDel, &items) != nil {
			return update{}, argErrorf(`"delete" must be an array of keys (strings), got %s`, jsonKind(rawDel))
		}
		seen := map[string]bool{}
		for i, it := range items {
			var k string
			if err := decodeString(it, &k); err != nil {
				return update{}, argErrorf("delete[%d]: must be a string, got %s", i, jsonKind(it))
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

// decodeObject decodes a JSON object into its raw fields, refusing any
// other value and trailing data.
func decodeObject(raw []byte) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("got %s", jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return m, nil
}

func decodeString(raw json.RawMessage, v *string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return fmt.Errorf("not a string")
	}
	return json.Unmarshal(raw, v)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonKind names the kind of a JSON value for error messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return "a number"
	}
	return "invalid JSON"
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
