package core

import (
	"bytes"
	"testing"
)

// encodeRecord splices the stored bands in; the bytes must be those of a
// plain encoding, whatever the items hold (quotes, the placeholder's own
// text, HTML characters the encoder leaves unescaped).
func TestEncodeRecordMatchesMarshal(t *testing.T) {
	tricky := []string{`say "items":"\u0000band 0" now`, "<b>&amp;</b>", "plain", "\u2028 line"}
	var bands []StoredBand
	for i, text := range tricky {
		raw, err := marshalNoEscape([]Item{UserMessage(text), AssistantMessage(text)})
		if err != nil {
			t.Fatal(err)
		}
		bands = append(bands, StoredBand{Band: BandLive.String(), Tokens: i, Count: 2, Items: trimNewline(raw)})
		bands = append(bands, StoredBand{Band: BandAnchor.String(), Blob: "d"})
	}
	rec := &AssemblyRecord{Version: AssemblyRecordVersion, Turn: 7, ThreadID: "t", Stored: &StoredParts{Bands: bands}}
	want, err := marshalNoEscape(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeRecord differs from marshal:\n got %s\nwant %s", got, want)
	}
	for i, b := range rec.Stored.Bands {
		if b.Blob == "" && !bytes.Contains(b.Items, []byte("user")) {
			t.Fatalf("band %d not restored: %s", i, b.Items)
		}
	}
}
