package jsonargs_test

import (
	"errors"
	"testing"

	"github.com/stratamem/strata/memory/internal/jsonargs"
)

func TestObjectRefusesTrailingData(t *testing.T) {
	for _, raw := range []string{
		`{"set":{"a":"1"}}}`, // a stray closer: json.Decoder.More is false before it
		`{"set":{"b":"1"}}]`,
		`{"set":{"c":"1"}} {"x":1}`,
		`{} 1`,
		`{}"x"`,
		`{} ,`,
		`{"a":1}}  `,
	} {
		if m, err := jsonargs.Object([]byte(raw)); err == nil || err.Error() != "trailing data after the object" {
			t.Errorf("%s: %v, %v; want trailing data refused", raw, m, err)
		}
	}
	for _, raw := range []string{`{}`, ` {"set":{"a":"1"}} `, "{\"a\":[1,{\"b\":null}]}\n\t", `{"a":"}]"}`} {
		if _, err := jsonargs.Object([]byte(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	for _, raw := range []string{`[]`, `"x"`, `{"a":`, `{"a":1,}`} {
		if _, err := jsonargs.Object([]byte(raw)); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

func TestFieldsWrapsTheSentinel(t *testing.T) {
	bad := errors.New("bad args")
	_, err := jsonargs.Fields(`{"set":{}}}`, 1<<10, `use {"set": {}}`, bad, "set")
	if !errors.Is(err, bad) || err.Error() != `arguments must be a JSON object (trailing data after the object): use {"set": {}}` {
		t.Fatalf("%v", err)
	}
	if f, err := jsonargs.Fields(`{"set":{}}`, 1<<10, "", bad, "set"); err != nil || len(f) != 1 {
		t.Fatalf("%v, %v", f, err)
	}
}
