package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// insignificant white space, so equal documents give equal bytes. Input
// that is not exactly one JSON value is returned unchanged: NewRuntime
// rejects such schemas (checkSchema) before they get here.
func canonicalJSON(raw []byte) json.RawMessage {
	v, err := decodeOne(raw)
	if err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	out, err := marshalNoEscape(v)
	if err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return out
}

// decodeOne decodes exactly one JSON value: trailing data is an error, not
// ignored.
func decodeOne(raw []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// checkSchema reports a tool or function schema that is not one JSON
// object: every provider wants an object schema for the arguments.
func checkSchema(raw []byte) error {
	v, err := decodeOne(raw)
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("a schema must be a JSON object, got %s", bytes.TrimSpace(raw))
	}
	return nil
}

// marshalNoEscape encodes v like json.Marshal (maps with sorted keys) but
// leaves <, > and & alone: layer output is read by models, not browsers.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
