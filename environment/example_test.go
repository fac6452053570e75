package environment_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
)

func Example() {
	ctx := context.Background()
	base, _ := os.MkdirTemp("", "strata-env")
	defer os.RemoveAll(base)
	dir := filepath.Join(base, "data")

	// The first open creates the directory and records the embedder.
	env, err := environment.Open(ctx, dir, environment.Options{Embedder: hashing.New(64)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Created, env.Recorded.Embedder, env.State != nil)
	_ = env.Close()

	// Later opens use the recorded embedder...
	env, _ = environment.Open(ctx, dir, environment.Options{})
	fmt.Println(env.Memory.Embedder.Model())
	_ = env.Close()

	// ...and refuse another one.
	_, err = environment.Open(ctx, dir, environment.Options{Embedder: hashing.New(32)})
	var me *environment.EmbedderMismatchError
	fmt.Println(errors.As(err, &me), me.Recorded.Embedder, me.Given.Embedder)
	// Output:
	// true hash-64 true
	// hash-64
	// true hash-64 hash-32
}
