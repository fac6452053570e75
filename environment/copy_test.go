package environment_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/vectorstore"
)

func TestCopyRecords(t *testing.T) {
	ctx := context.Background()
	open := func(name string) *environment.Env {
		env, err := environment.Open(ctx, filepath.Join(t.TempDir(), name), environment.Options{Embedder: hashing.New(16)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Close() })
		return env
	}
	src, dst := open("src"), open("dst")
	for _, id := range []string{"keep-1", "keep-2", "keep-3", "skip-1"} {
		put(t, src, id)
	}
	opts := environment.CopyOptions{Include: func(r *vectorstore.Record) bool { return strings.HasPrefix(r.ID, "keep") }, Batch: 2}
	var done int
	opts.Progress = func(n int) { done += n }
	res, err := environment.CopyRecords(ctx, src.Records(), dst.Records(), opts)
	if err != nil || res != (environment.CopyResult{Source: 3, Written: 3}) || done != 3 {
		t.Fatalf("copy: %+v, %d done, %v", res, done, err)
	}
	verified, target, err := environment.VerifyCopy(ctx, src.Records(), dst.Records(), opts, nil)
	if err != nil || verified != 3 || target != 3 {
		t.Fatalf("verify: %d/%d, %v", verified, target, err)
	}
	// Again: everything is there already.
	opts.Progress = nil
	if res, err := environment.CopyRecords(ctx, src.Records(), dst.Records(), opts); err != nil || res != (environment.CopyResult{Source: 3, Skipped: 3}) {
		t.Fatalf("second copy: %+v, %v", res, err)
	}
	a, err := src.Records().Get(ctx, "keep-1")
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.Text = "changed"
	if environment.SameContent(&a, &b) || environment.SameRecord(&a, &b) || !environment.SameRecord(&a, &a) {
		t.Error("SameContent/SameRecord")
	}
}
