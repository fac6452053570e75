package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratamem/strata/cmd/memctl/internal/cli"
)

func Example() {
	dir, err := os.MkdirTemp("", "memctl-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store := filepath.Join(dir, "data")
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"--store", store, "--embedder", "hash:16"}, args...),
			cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		fmt.Printf("exit %d %s", code, strings.ReplaceAll(errb.String(), dir, "DIR"))
		return out.String()
	}
	fmt.Print(run("add", "--json", "-l", "scratchpad", "-t", "t1", "--key", "plan", "ship v2 on Friday"))

	var rec struct {
		ID, Text string
		Metadata map[string]string
	}
	_ = json.Unmarshal([]byte(run("ls", "--json", "--layer", "scratchpad", "--match", "friday")), &rec)
	fmt.Println(rec.ID, rec.Text, rec.Metadata["key"])

	run("show", "no-such-id")
	run("add", "-l", "scratchpad", "-t", "t1", "no key")
	// Output:
	// exit 0 {"id":"note-ca65b0749b5e3a53d3aa61a91baf30f1524ef77b","layer":"scratchpad","kind":"note","action":"added","text":"plan: ship v2 on Friday"}
	// exit 0 note-ca65b0749b5e3a53d3aa61a91baf30f1524ef77b plan: ship v2 on Friday plan
	// exit 3 memctl: no memory with id "no-such-id" in DIR/data
	// exit 2 memctl: scratchpad: --key is required (see 'memctl add --help')
}
