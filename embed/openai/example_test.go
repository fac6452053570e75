package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stratamem/strata/embed/openai"
)

func Example() {
	// A stand-in for OpenAI, Ollama's /v1, vLLM or TEI: it answers every
	// input with a 3-dimensional vector, listing them in reverse order.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		data := []map[string]any{}
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, map[string]any{"index": i, "embedding": []float32{float32(len(req.Input[i])), 0, 1}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
	}))
	defer srv.Close()

	e, err := openai.New(openai.Options{
		BaseURL: srv.URL + "/v1", // e.g. "http://localhost:11434/v1" for Ollama
		APIKey:  "sk-...",        // empty for local servers
		Model:   "text-embedding-3-small",
	})
	if err != nil {
		panic(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"a", "bb", "ccc"})
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Model(), e.Dimension())
	fmt.Println(vecs[0][0], vecs[1][0], vecs[2][0])
	// Output:
	// openai:text-embedding-3-small 3
	// 1 2 3
}
