package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Environment variables memctl reads.
const (
	EnvStore    = "STRATA_STORE"
	EnvEmbedder = "STRATA_EMBEDDER"
	EnvConfig   = "STRATA_MEMCTL_CONFIG"
)

// DefaultStore is the embedded default's data directory, relative to the
// working directory.
var DefaultStore = filepath.Join(".", ".strata", "data")

// fileConfig is $XDG_CONFIG_HOME/strata/memctl.json.
type fileConfig struct {
	Store    string `json:"store,omitempty"`
	Embedder string `json:"embedder,omitempty"`
	// State is the runtime's state store, where inspect reads recorded
	// assemblies and rm --resource deletes layer state, when the store URL
	// does not say (a directory or postgres:// URL).
	State string `json:"state,omitempty"`
}

// configPath returns the config file memctl reads: --config, else
// $STRATA_MEMCTL_CONFIG, else $XDG_CONFIG_HOME/strata/memctl.json (with
// XDG_CONFIG_HOME defaulting to ~/.config).
func configPath(flagVal string) string {
	if flagVal != "" {
		return flagVal
	}
	if p := os.Getenv(EnvConfig); p != "" {
		return p
	}
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "strata", "memctl.json")
}

// loadConfig reads the config file; a missing file is an empty config
// unless it was named explicitly.
func loadConfig(path string, explicit bool) (fileConfig, error) {
	var c fileConfig
	if path == "" {
		return c, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, usageErrorf("config %s: %v (known keys: store, embedder, state)", path, err)
	}
	return c, nil
}

// storeRef is a resolved --store value.
type storeRef struct {
	Raw    string
	Source string // where it came from, for stats
	// Dir is set for an embedded directory store, URL otherwise.
	Dir    string
	URL    string
	Scheme string
}

func (r storeRef) String() string {
	if r.Dir != "" {
		return r.Dir
	}
	return redactURL(r.URL)
}

// knownSchemes are the URL schemes memctl opens besides directories.
var knownSchemes = []string{"chromem", "postgres", "postgresql", "qdrant"}

// parseStoreRef reads a store value: a directory (the embedded default,
// opened with embedded.Open), file:///dir, or a vectorstore URL
// (chromem:///dir, postgres://..., qdrant://host:port).
func parseStoreRef(s string) (storeRef, error) {
	if strings.TrimSpace(s) == "" {
		return storeRef{}, usageErrorf("empty store")
	}
	ref := storeRef{Raw: s}
	if i := strings.Index(s, ":"); i > 1 {
		u, err := url.Parse(s)
		if err != nil {
			return ref, usageErrorf("cannot parse store URL %q", redactURL(s))
		}
		scheme := strings.ToLower(u.Scheme)
		switch {
		case scheme == "file":
			if u.Host != "" && u.Host != "localhost" {
				return ref, usageErrorf("file URL with a host: %q", redactURL(s))
			}
			ref.Dir = filepath.Clean(u.Path)
			return ref, nil
		case slices.Contains(knownSchemes, scheme):
			ref.URL, ref.Scheme = s, scheme
			if scheme == "postgresql" {
				ref.Scheme = "postgres"
			}
			return ref, nil
		case strings.Contains(s, "://"):
			return ref, usageErrorf("unknown store scheme %q (want a directory, file://, chromem://, postgres:// or qdrant://)", u.Scheme)
		}
	}
	ref.Dir = filepath.Clean(s)
	return ref, nil
}

// secretParams are the URL query parameters whose values are credentials
// (postgres password and sslpassword, qdrant api_key, and the usual
// spellings of API keys and tokens), compared case-insensitively.
var secretParams = []string{"password", "sslpassword", "api_key", "apikey", "token"}

// redacted replaces a credential in messages.
const redacted = "xxxxx"

// redactURL hides the credentials of a URL for messages: the userinfo
// password and the values of secretParams. A value that does not parse as
// a URL is shown as its scheme only: where its password is cannot be
// told.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.Index(s, ":"); i > 0 && isScheme(s[:i]) {
			return s[:i] + "://<redacted>"
		}
		return "<redacted>"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
	}
	if u.RawQuery != "" {
		// Rewritten pair by pair, so the other parameters read as given.
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, hasValue := strings.Cut(p, "=")
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if hasValue && isSecretParam(name) {
				parts[i] = k + "=" + redacted
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.String()
}

func isSecretParam(name string) bool {
	for _, p := range secretParams {
		if strings.EqualFold(strings.TrimSpace(name), p) {
			return true
		}
	}
	return false
}

// isScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, "+", "-" or ".").
func isScheme(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// resolveStore applies the order --store > $STRATA_STORE > config file >
// DefaultStore.
func resolveStore(flagVal string, cfg fileConfig, cfgPath string) (storeRef, error) {
	var raw, src string
	switch {
	case flagVal != "":
		raw, src = flagVal, "--store flag"
	case os.Getenv(EnvStore) != "":
		raw, src = os.Getenv(EnvStore), "$"+EnvStore
	case cfg.Store != "":
		raw, src = cfg.Store, "config file "+cfgPath
	default:
		raw, src = DefaultStore, "default (embedded, "+DefaultStore+")"
	}
	ref, err := parseStoreRef(raw)
	ref.Source = src
	return ref, err
}

// resolveEmbedderFlag applies --embedder > $STRATA_EMBEDDER > config
// file; "" means none was set (the store's recorded embedder, else the
// default model, is used).
func resolveEmbedderFlag(flagVal string, cfg fileConfig) (val, src string) {
	switch {
	case flagVal != "":
		return flagVal, "--embedder flag"
	case os.Getenv(EnvEmbedder) != "":
		return os.Getenv(EnvEmbedder), "$" + EnvEmbedder
	case cfg.Embedder != "":
		return cfg.Embedder, "config file"
	}
	return "", ""
}
