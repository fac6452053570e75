package providertest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// update is registered in every test binary that imports this package,
// so `go test -update` rewrites that package's golden files.
var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/")

// CompareGolden fails the test unless got is byte for byte the file at
// path; with -update it writes got there instead.
func CompareGolden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Fatalf("request body differs from %s:\n got: %s\nwant: %s", path, got, want)
	}
}

// CheckGolden checks the request body raw (decoded as body) against the
// golden file at path. A plain request must match the file byte for byte
// (CompareGolden, so -update rewrites it). A streamed one must carry
// stream: true and, once the flag is gone and dropStream (when not nil)
// has checked and removed what else only streaming adds, hold the same
// JSON as the file: streaming changes nothing else.
func CheckGolden(t testing.TB, path string, raw []byte, body map[string]any, stream bool, dropStream func(body map[string]any)) {
	t.Helper()
	if !stream {
		CompareGolden(t, path, Indent(t, raw))
		return
	}
	if body["stream"] != true {
		t.Fatal("streaming request without stream: true")
	}
	delete(body, "stream")
	if dropStream != nil {
		dropStream(body)
	}
	if plain, _ := json.Marshal(body); !JSONEqual(t, plain, ReadFile(t, path)) {
		t.Fatalf("streamed body differs from the golden one:\n%s", raw)
	}
}

// ReadFile returns the file at path or fails the test.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// JSONEqual reports whether a and b hold the same JSON value, whatever
// their key order and spacing.
func JSONEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatal("not JSON")
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return string(ra) == string(rb)
}

// Indent renders a body for golden files, keeping the SDK's key order.
func Indent(t testing.TB, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, raw)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// LoadSchema reads and resolves the JSON schema at path.
func LoadSchema(t testing.TB, path string) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(ReadFile(t, path), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// DecodeBody decodes a request body and checks it against schema.
func DecodeBody(t testing.TB, schema *jsonschema.Resolved, raw []byte) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(body); err != nil {
		t.Fatalf("body violates the request schema: %v\n%s", err, raw)
	}
	return body
}
