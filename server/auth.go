package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// AllResources is the resource list of an admin key: every resource, the
// global scope and the whole-store reads (stats of every resource).
const AllResources = "*"

// Errors of authentication and authorisation. The HTTP API answers them
// with 401 and 403, the MCP tools with a tool error.
var (
	// ErrUnauthenticated is wrapped when a request carries no key or an
	// unknown one.
	ErrUnauthenticated = errors.New("server: unauthenticated")
	// ErrForbidden is wrapped when a key asks for a resource it is not
	// bound to.
	ErrForbidden = errors.New("server: forbidden")
	// ErrInvalidKeys is wrapped when a key file or key flag cannot be
	// used.
	ErrInvalidKeys = errors.New("server: invalid keys")
)

// Key is one API key as configured: its secret (or the secret's SHA-256),
// a name for logs and spans, and the resources it may read and write.
type Key struct {
	// Name identifies the key in logs and spans; never the secret.
	Name string `json:"name"`
	// Secret is the key itself, as clients send it. Leave it empty and
	// set SHA256 to keep secrets out of the key file.
	Secret string `json:"key,omitempty"`
	// SHA256 is the hex SHA-256 of the secret.
	SHA256 string `json:"sha256,omitempty"`
	// Resources are the resources the key may use; AllResources ("*")
	// makes it an admin key.
	Resources []string `json:"resources"`
}

// Principal is an authenticated caller: the key's name and what it may
// touch.
type Principal struct {
	Name      string
	Resources []string
	admin     bool
}

// Admin reports whether the principal may use every resource.
func (p *Principal) Admin() bool { return p != nil && p.admin }

// Allows reports whether the principal may read and write resource. No
// key allows the empty resource (global or unowned records) but an
// admin's.
func (p *Principal) Allows(resource string) bool {
	if p == nil {
		return false
	}
	if p.admin {
		return true
	}
	return resource != "" && slices.Contains(p.Resources, resource)
}

// only is the principal's one resource when it is bound to exactly one,
// so that requests may leave the resource out.
func (p *Principal) only() string {
	if p != nil && !p.admin && len(p.Resources) == 1 {
		return p.Resources[0]
	}
	return ""
}

// Keyring looks API keys up by the SHA-256 of the secret presented, so
// that no secret is compared byte by byte and a key file may hold hashes
// only.
type Keyring struct {
	byHash map[[32]byte]*Principal
}

// NewKeyring checks keys and indexes them. A key needs a name, a secret
// or a well-formed SHA256, and at least one resource; names and secrets
// must be unique.
func NewKeyring(keys ...Key) (*Keyring, error) {
	kr := &Keyring{byHash: map[[32]byte]*Principal{}}
	names := map[string]bool{}
	for i, k := range keys {
		where := fmt.Sprintf("key %d", i+1)
		if k.Name != "" {
			where = fmt.Sprintf("key %q", k.Name)
		}
		var h [32]byte
		switch {
		case k.Secret != "" && k.SHA256 != "":
			return nil, fmt.Errorf("%w: %s has both key and sha256", ErrInvalidKeys, where)
		case k.Secret != "":
			if len(k.Secret) < 16 {
				return nil, fmt.Errorf("%w: %s is shorter than 16 characters", ErrInvalidKeys, where)
			}
			h = sha256.Sum256([]byte(k.Secret))
		case k.SHA256 != "":
			b, err := hex.DecodeString(k.SHA256)
			if err != nil || len(b) != 32 {
				return nil, fmt.Errorf("%w: %s: sha256 is not 64 hex digits", ErrInvalidKeys, where)
			}
			copy(h[:], b)
		default:
			return nil, fmt.Errorf("%w: %s has no key or sha256", ErrInvalidKeys, where)
		}
		if k.Name == "" {
			return nil, fmt.Errorf("%w: %s has no name", ErrInvalidKeys, where)
		}
		if names[k.Name] {
			return nil, fmt.Errorf("%w: two keys are named %q", ErrInvalidKeys, k.Name)
		}
		names[k.Name] = true
		if _, dup := kr.byHash[h]; dup {
			return nil, fmt.Errorf("%w: %s has the secret of another key", ErrInvalidKeys, where)
		}
		p := &Principal{Name: k.Name}
		for _, r := range k.Resources {
			switch r = strings.TrimSpace(r); {
			case r == AllResources:
				p.admin = true
			case r == "":
				return nil, fmt.Errorf("%w: %s lists an empty resource", ErrInvalidKeys, where)
			default:
				p.Resources = append(p.Resources, r)
			}
		}
		if !p.admin && len(p.Resources) == 0 {
			return nil, fmt.Errorf("%w: %s is bound to no resource (list them, or %q for every one)", ErrInvalidKeys, where, AllResources)
		}
		if p.admin {
			p.Resources = nil
		}
		kr.byHash[h] = p
	}
	return kr, nil
}

// Len is the number of keys.
func (kr *Keyring) Len() int {
	if kr == nil {
		return 0
	}
	return len(kr.byHash)
}

// Lookup returns the principal of a secret, or an error wrapping
// ErrUnauthenticated.
func (kr *Keyring) Lookup(secret string) (*Principal, error) {
	if secret == "" {
		return nil, fmt.Errorf("%w: no API key (send Authorization: Bearer KEY)", ErrUnauthenticated)
	}
	if kr != nil {
		if p, ok := kr.byHash[sha256.Sum256([]byte(secret))]; ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: unknown API key", ErrUnauthenticated)
}

// keyFile is the JSON of a key file.
type keyFile struct {
	Keys []Key `json:"keys"`
}

// ReadKeyFile reads keys from a JSON file:
//
//	{"keys": [
//	  {"name": "agent-7", "key": "s3cret-of-at-least-16", "resources": ["user-7"]},
//	  {"name": "ops", "sha256": "<hex of the secret>", "resources": ["*"]}
//	]}
//
// Unknown fields are errors, so a misspelt "resources" cannot leave a key
// bound to nothing silently.
func ReadKeyFile(path string) ([]Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKeys, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var kf keyFile
	if err := dec.Decode(&kf); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidKeys, path, err)
	}
	return kf.Keys, nil
}

// ParseKeyFlag reads a key given on the command line as
// NAME:SECRET=RESOURCE[,RESOURCE...] (RESOURCE "*" for an admin key).
func ParseKeyFlag(s string) (Key, error) {
	head, res, ok := strings.Cut(s, "=")
	name, secret, ok2 := strings.Cut(head, ":")
	if !ok || !ok2 || name == "" || secret == "" || res == "" {
		return Key{}, fmt.Errorf("%w: want NAME:SECRET=RESOURCE[,RESOURCE...], got %d characters without that shape", ErrInvalidKeys, len(s))
	}
	return Key{Name: name, Secret: secret, Resources: strings.Split(res, ",")}, nil
}
