package uselite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	// ModelID identifies the vector space of this model.
	ModelID = "use-lite-en@0.2.0"
	// DirName is the model's folder under a data directory's models/.
	DirName = "use-lite-en-0.2.0"
	// InstallHint says how to get the model files when they are missing.
	// It names the variable first: in a project of one's own there is no
	// Makefile with a model target, only a strata checkout has one.
	InstallHint = "set STRATA_MODEL_DIR to the model directory, or install it with `make model` (or scripts/model.sh) in a strata checkout"
)

// Environment variables consulted by DefaultDir, in this order.
const (
	EnvModelDir = "STRATA_MODEL_DIR" // the model folder itself
	EnvDataDir  = "STRATA_DATA_DIR"  // a data directory holding models/use-lite-en-0.2.0
)

var (
	// ErrModelNotFound is wrapped when the model files are not installed.
	// The message ends with InstallHint: set STRATA_MODEL_DIR, or install
	// the model from a strata checkout.
	ErrModelNotFound = errors.New("uselite: model not found")
	// ErrCorruptModel is wrapped when a model file does not have its pinned
	// sha256 (a partial download or an edited file).
	ErrCorruptModel = errors.New("uselite: model file corrupt")
	// ErrUnsupportedModel is wrapped when model.json or vocab.json does not
	// describe the graph this package implements.
	ErrUnsupportedModel = errors.New("uselite: unsupported model")
)

// pinned lists every file the loader reads with its sha256, the same sums
// scripts/model.sh checks after npm pack.
var pinned = []struct{ name, sha256 string }{
	{"model.json", "507d11df18b070f99e0ad650b9a4e6534a4cfb05040127e8ce579f00c8fa3b53"},
	{"vocab.json", "1ad860b9720c16cd48e666d664a556b2515c04f5a26a4b53c0372427913b1b8e"},
	{"group1-shard1of7", "8775e61b6a4235ea230a62a0d81f1ff00f5213ce86baa5d89c29e611f8cd7412"},
	{"group1-shard2of7", "deaf897e5eea5be6c71ea62876a092034560b6f6fbc99c87a768076385a465bd"},
	{"group1-shard3of7", "50ee49b0daf620cf0cacda2f5fcc0da5929f4a3e520034844b6f8d9f3f4ec936"},
	{"group1-shard4of7", "c1a50daae51e7c6e1e904f5d8d638a8658a0a1d310b9345cd7a368866304d596"},
	{"group1-shard5of7", "410cde3029282e5f601c782985cbb5caa96977f6705dec981c98dd02e93fec6b"},
	{"group1-shard6of7", "83ef116b2b98dc98e03547280ca0166142fbf6b4547bf1d9e6d13a8f518c088b"},
	{"group1-shard7of7", "a29a5e08ee3afd839250b9187b89f1d3163749b5b1807bb175341a16c6012689"},
}

// DefaultDir returns the folder Default loads the model from:
//
//  1. $STRATA_MODEL_DIR, when set;
//  2. $STRATA_DATA_DIR/models/use-lite-en-0.2.0, when STRATA_DATA_DIR is set;
//  3. otherwise the nearest .strata/models/use-lite-en-0.2.0 holding a
//     model.json, looking in the working directory and then each parent (so
//     tests and commands run anywhere inside the repository find the copy
//     `make model` installed at its root).
//
// When nothing is found it returns an error wrapping ErrModelNotFound that
// says where it looked and ends with InstallHint.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvModelDir); d != "" {
		return d, checkPresent(d, EnvModelDir+"="+d)
	}
	if d := os.Getenv(EnvDataDir); d != "" {
		dir := filepath.Join(d, "models", DirName)
		return dir, checkPresent(dir, EnvDataDir+"="+d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%w: cannot read working directory: %w; %s", ErrModelNotFound, err, InstallHint)
	}
	for d := wd; ; {
		dir := filepath.Join(d, ".strata", "models", DirName)
		if _, err := os.Stat(filepath.Join(dir, "model.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", fmt.Errorf("%w: no .strata/models/%s in %s or its parents, and neither %s nor %s is set; %s",
		ErrModelNotFound, DirName, wd, EnvModelDir, EnvDataDir, InstallHint)
}

func checkPresent(dir, from string) error {
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		return fmt.Errorf("%w: no model.json in %s (from %s); %s", ErrModelNotFound, dir, from, InstallHint)
	}
	return nil
}

// readVerified reads every pinned file of dir, checking its sha256.
func readVerified(dir string) (map[string][]byte, error) {
	files := make(map[string][]byte, len(pinned))
	var missing []string
	for _, p := range pinned {
		b, err := os.ReadFile(filepath.Join(dir, p.name))
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, p.name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("uselite: reading %s: %w", filepath.Join(dir, p.name), err)
		}
		if got := sha256Hex(b); got != p.sha256 {
			return nil, fmt.Errorf("%w: %s has sha256 %s, want %s; delete %s, then %s",
				ErrCorruptModel, filepath.Join(dir, p.name), got, p.sha256, dir, InstallHint)
		}
		files[p.name] = b
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s lacks %s; %s", ErrModelNotFound, dir, strings.Join(missing, ", "), InstallHint)
	}
	return files, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
