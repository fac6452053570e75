// Package jsonargs reads function-call arguments field by field, for the
// memory layers whose arguments are too loose for a JSON schema (a note
// given as a string or a list) and whose errors must tell the model what
// to fix.
package jsonargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Error is a rejection of arguments, worded for the model. It matches
// (errors.Is) the layer's sentinel.
type Error struct {
	Msg      string
	Sentinel error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Sentinel }

// Errorf returns an *Error matching sentinel.
func Errorf(sentinel error, format string, a ...any) error {
	return &Error{Msg: fmt.Sprintf(format, a...), Sentinel: sentinel}
}

// Fields decodes the arguments of a call into the raw fields of their
// object, refusing arguments over maxBytes, anything but one JSON object
// and fields not in allowed. Empty arguments are an empty object. Its
// errors match sentinel and end with usage, the shape to send.
func Fields(raw string, maxBytes int, usage string, sentinel error, allowed ...string) (map[string]json.RawMessage, error) {
	if len(raw) > maxBytes {
		return nil, Errorf(sentinel, "arguments are %d bytes, the limit is %d", len(raw), maxBytes)
	}
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	fields, err := Object([]byte(raw))
	if err != nil {
		return nil, Errorf(sentinel, "arguments must be a JSON object (%v): %s", err, usage)
	}
	if unknown := Unknown(fields, allowed...); unknown != "" {
		return nil, Errorf(sentinel, "unknown field %s: %s", unknown, usage)
	}
	return fields, nil
}

// Unknown lists the fields not in allowed, quoted and sorted, or "".
func Unknown(fields map[string]json.RawMessage, allowed ...string) string {
	var unknown []string
	for name := range fields {
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	sort.Strings(unknown)
	return strings.Join(unknown, ", ")
}

// Object decodes a JSON object into its raw fields, refusing any other
// value and trailing data.
func Object(raw []byte) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("got %s", Kind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	// dec.More is false before a stray '}' or ']', so ask for the next
	// token: only the end of the input is no trailing data.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return m, nil
}

// String decodes a JSON string, refusing any other value.
func String(raw json.RawMessage, v *string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return fmt.Errorf("not a string")
	}
	return json.Unmarshal(raw, v)
}

// IsNull reports whether raw is JSON null.
func IsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// Kind names the kind of a JSON value for error messages: "an object",
// "an array", "a string", "a number", "a boolean", "null", "nothing" or
// "invalid JSON".
func Kind(raw []byte) string {
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
