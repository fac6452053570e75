package ollama_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stratamem/strata/embed/ollama"
)

func Example() {
	// A stand-in for `ollama serve` answering POST /api/embed.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		out := [][]float32{}
		for _, s := range req.Input {
			out = append(out, []float32{float32(len(s)), 1})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": out})
	}))
	defer srv.Close()

	e, err := ollama.New(ollama.Options{BaseURL: srv.URL, Model: "nomic-embed-text"})
	if err != nil {
		panic(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"hello", "hi"})
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Model(), e.Dimension(), vecs[0][0], vecs[1][0])
	// Output:
	// ollama:nomic-embed-text 2 5 2
}
