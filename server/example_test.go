package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/server"
)

// Serve an embedded store over HTTP with one key per user, and use it as
// a non-Go agent would: plain HTTP with a bearer key. (The example embeds
// with the hashing embedder so that it runs without the offline model;
// `strata serve` uses the store's recorded embedder.)
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strata-example-")
	defer os.RemoveAll(dir)
	env, err := environment.Open(ctx, filepath.Join(dir, "data"), environment.Options{Embedder: hashing.New(256)})
	if err != nil {
		log.Fatal(err)
	}
	keys, _ := server.NewKeyring(
		server.Key{Name: "agent-7", Secret: "secret-of-user-7-agent", Resources: []string{"user-7"}},
		server.Key{Name: "agent-8", Secret: "secret-of-user-8-agent", Resources: []string{"user-8"}},
	)
	srv, err := server.New(env, server.Options{Keys: keys})
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler()) // http.Server{Addr: "127.0.0.1:7411"} in production

	post := func(key, path, body string) string {
		req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprint(resp.StatusCode, " ", strings.TrimSpace(string(b)))
	}
	out := post("secret-of-user-7-agent", "/v1/facts", `{"facts": [{"subject": "user", "predicate": "lives in", "value": "Lisbon"}]}`)
	fmt.Println(out[:len(`200 {"added":1`)])
	out = post("secret-of-user-7-agent", "/v1/search", `{"query": "user lives in Lisbon", "k": 1}`)
	fmt.Println(strings.Contains(out, `"text":"user lives in: Lisbon"`))
	fmt.Println(post("secret-of-user-8-agent", "/v1/search", `{"resource": "user-7", "query": "Lisbon"}`))

	hs.Close()
	_ = srv.Shutdown(ctx)
	_ = env.Close()
	// Output:
	// 200 {"added":1
	// true
	// 403 {"error":{"code":"forbidden","message":"server: forbidden: key \"agent-8\" may not use resource \"user-7\""}}
}
