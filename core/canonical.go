package core

import (
	"bytes"
	"encoding/json"
)

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// insignificant white space, so equal documents give equal bytes. Invalid
// JSON is returned unchanged.
func canonicalJSON(raw []byte) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	out, err := marshalNoEscape(v)
	if err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return out
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
