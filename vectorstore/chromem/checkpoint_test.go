package chromem

import (
	"testing"

	"github.com/stratamem/strata/vectorstore"
)

// TestCheckpointRecordRoundTrip checks the slot encoding and that a slot
// with any byte changed is rejected.
func TestCheckpointRecordRoundTrip(t *testing.T) {
	fr := encodeUpsert([]vectorstore.Record{rec("a", 4, 1)})
	r := ckptRecord{seq: 7, cur: extentOf(100, fr), pend: extentOf(0, fr), hasPend: true}
	b := r.marshal()
	got, ok := unmarshalCkpt(b)
	if !ok || got != r {
		t.Fatalf("round trip: %+v %v, want %+v", got, ok, r)
	}
	for i := range b {
		bad := append([]byte(nil), b...)
		bad[i] ^= 0x01
		if _, ok := unmarshalCkpt(bad); ok {
			t.Fatalf("a slot with byte %d flipped was accepted", i)
		}
	}
	if _, ok := unmarshalCkpt(b[:len(b)-1]); ok {
		t.Fatal("a short slot was accepted")
	}
}

// BenchmarkCheckpointAcked is the checkpoint's cost per append: one
// unsynced write of a slot (the append itself costs a write and an fsync).
func BenchmarkCheckpointAcked(b *testing.B) {
	ck, _, err := openCkpt(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ck.close()
	fr := encodeUpsert([]vectorstore.Record{rec("a", 512, 1)})
	b.ReportAllocs()
	var size int64
	for b.Loop() {
		size += int64(len(fr))
		ck.acked(size, fr)
	}
}
