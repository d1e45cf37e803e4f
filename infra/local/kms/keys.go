package kms

import (
	"crypto/rand"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Key specs and usages as KMS names them; the stand-in holds keys of
// these two kinds only.
const (
	SpecHMAC256      = "HMAC_256"
	SpecSymmetric    = "SYMMETRIC_DEFAULT"
	UsageMAC         = "GENERATE_VERIFY_MAC"
	UsageEncrypt     = "ENCRYPT_DECRYPT"
	materialLength   = 32 // both kinds: 256 bits
	keyFileMode      = 0o600
	keyFileDirectory = 0o755
)

// Region and Account are those of every key ARN the stand-in makes; the
// local stack's functions run in Region (lambdarun.Environment).
const (
	Region  = "us-east-1"
	Account = "000000000000"
)

// Spec is a key of template.yaml: its logical id (its alias is
// alias/<LogicalID>), its kind, and the variable that gives its ARN to
// every function.
type Spec struct {
	LogicalID string
	KeySpec   string
	KeyUsage  string
	Env       string
}

// Specs are the template's keys: contract v6's WebhookKey derives the
// generated webhook secrets (GenerateMac), WebhookSecretsKey encrypts the
// imported ones (Encrypt, Decrypt); contract v7's EnvironmentSecretsKey
// encrypts environments' secret variables (Encrypt here, Decrypt by the
// execution plane), and SessionTokenKey derives sessions' tokens
// (GenerateMac).
var Specs = []Spec{
	{LogicalID: "WebhookKey", KeySpec: SpecHMAC256, KeyUsage: UsageMAC, Env: "WEBHOOK_KEY_ID"},
	{LogicalID: "WebhookSecretsKey", KeySpec: SpecSymmetric, KeyUsage: UsageEncrypt, Env: "WEBHOOK_SECRETS_KEY_ID"},
	{LogicalID: "EnvironmentSecretsKey", KeySpec: SpecSymmetric, KeyUsage: UsageEncrypt, Env: "ENVIRONMENT_SECRETS_KEY_ID"},
	{LogicalID: "SessionTokenKey", KeySpec: SpecHMAC256, KeyUsage: UsageMAC, Env: "SESSION_TOKEN_KEY_ID"},
}

// EndpointEnv is the variable that points the functions' KMS client at
// the stand-in, as AWS_ENDPOINT_URL_SSM does for Parameter Store.
const EndpointEnv = "AWS_ENDPOINT_URL_KMS"

// Key is one key with its material, as the key file holds it.
type Key struct {
	LogicalID string    `json:"logicalId"`
	KeyID     string    `json:"keyId"`
	KeySpec   string    `json:"keySpec"`
	KeyUsage  string    `json:"keyUsage"`
	Material  []byte    `json:"material"` // base64 in the file
	Created   time.Time `json:"created"`
}

// ARN is the key's ARN.
func (k *Key) ARN() string { return "arn:aws:kms:" + Region + ":" + Account + ":key/" + k.KeyID }

// Alias is the key's alias name: alias/<LogicalID>.
func (k *Key) Alias() string { return "alias/" + k.LogicalID }

// Keys are the stand-in's keys, one per Spec. They never change once
// made, so a Server may answer from them concurrently.
type Keys struct {
	specs []Spec
	list  []*Key
}

// keyFile is the key file's content.
type keyFile struct {
	Keys []*Key `json:"keys"`
}

// Generate makes new keys (crypto/rand), kept in memory only.
func Generate() (*Keys, error) { return generate(Specs, nil) }

// generate makes the keys of specs that have is missing, beside those
// it has.
func generate(specs []Spec, have []*Key) (*Keys, error) {
	ks := &Keys{specs: specs}
	for _, sp := range specs {
		var k *Key
		for _, h := range have {
			if h.LogicalID == sp.LogicalID {
				k = h
			}
		}
		if k == nil {
			id, err := uuid.NewRandom()
			if err != nil {
				return nil, err
			}
			k = &Key{LogicalID: sp.LogicalID, KeyID: id.String(), KeySpec: sp.KeySpec, KeyUsage: sp.KeyUsage,
				Material: make([]byte, materialLength), Created: time.Now().UTC().Truncate(time.Second)}
			if _, err := rand.Read(k.Material); err != nil {
				return nil, err
			}
		}
		ks.list = append(ks.list, k)
	}
	return ks, nil
}

// Open reads the key file at path, creating it with new keys (mode 0600,
// its folder too) when there is none, so that what the keys derive stays
// the same from one run to the next. A file that lacks a key of Specs gets
// it; a file whose mode lets others read it is set to 0600. A file that
// does not parse, or whose key is not of its Spec's kind, is an error that
// names the file: moving it away makes new keys (and new derived secrets).
func Open(path string) (*Keys, error) {
	for range 2 {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			ks, err := Generate()
			if err != nil {
				return nil, err
			}
			switch err := ks.write(path, false); {
			case errors.Is(err, fs.ErrExist):
				continue // another start made it first: read it
			case err != nil:
				return nil, err
			}
			return ks, nil
		}
		if err != nil {
			return nil, err
		}
		if err := private(path); err != nil {
			return nil, err
		}
		have, err := parse(data, Specs)
		if err != nil {
			return nil, fmt.Errorf("the KMS key file %s: %w (move it away to make new keys)", path, err)
		}
		ks, err := generate(Specs, have)
		if err != nil {
			return nil, err
		}
		if len(have) < len(ks.list) {
			if err := ks.write(path, true); err != nil {
				return nil, err
			}
		}
		return ks, nil
	}
	return nil, fmt.Errorf("the KMS key file %s: made and gone again", path)
}

// private sets the file's mode to 0600 when it lets others in.
func private(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&^keyFileMode != 0 {
		return os.Chmod(path, keyFileMode)
	}
	return nil
}

// parse reads a key file strictly: exactly the members of Key, each key
// of a Spec (once), of its Spec's kind, with a key id as KMS makes them
// and 32 bytes of material.
func parse(data []byte, specs []Spec) ([]*Key, error) {
	var f keyFile
	if err := json.Unmarshal(data, &f, json.RejectUnknownMembers(true)); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, k := range f.Keys {
		if k == nil {
			return nil, fmt.Errorf("key %d is null", i)
		}
		var sp *Spec
		for j := range specs {
			if specs[j].LogicalID == k.LogicalID {
				sp = &specs[j]
			}
		}
		switch id, err := uuid.Parse(k.KeyID); {
		case sp == nil:
			return nil, fmt.Errorf("key %d: %q is not a key of the template", i, k.LogicalID)
		case seen[k.LogicalID]:
			return nil, fmt.Errorf("%s is there twice", k.LogicalID)
		case err != nil || id.String() != k.KeyID:
			return nil, fmt.Errorf("%s: %q is not a key id", k.LogicalID, k.KeyID)
		case seen[k.KeyID]:
			return nil, fmt.Errorf("%s: key id %s is another key's", k.LogicalID, k.KeyID)
		case k.KeySpec != sp.KeySpec || k.KeyUsage != sp.KeyUsage:
			return nil, fmt.Errorf("%s is %s/%s, the template's is %s/%s", k.LogicalID, k.KeySpec, k.KeyUsage, sp.KeySpec, sp.KeyUsage)
		case len(k.Material) != materialLength:
			return nil, fmt.Errorf("%s: %d bytes of material, not %d", k.LogicalID, len(k.Material), materialLength)
		}
		seen[k.LogicalID], seen[k.KeyID] = true, true
	}
	return f.Keys, nil
}

// write writes the keys to path, mode 0600, never leaving a partial file
// there: a new file only where there is none (fs.ErrExist otherwise),
// unless replace.
func (ks *Keys) write(path string, replace bool) error {
	data, err := json.Marshal(keyFile{Keys: ks.list}, json.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, keyFileDirectory); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".new-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if replace {
		return os.Rename(tmp.Name(), path)
	}
	return os.Link(tmp.Name(), path)
}

// Key is the key of that logical id, or nil.
func (ks *Keys) Key(logicalID string) *Key {
	for _, k := range ks.list {
		if k.LogicalID == logicalID {
			return k
		}
	}
	return nil
}

// Environment is what every function gets to reach the stand-in served
// at endpoint: AWS_ENDPOINT_URL_KMS, and each key's ARN under its Spec's
// variable (WEBHOOK_KEY_ID, WEBHOOK_SECRETS_KEY_ID,
// ENVIRONMENT_SECRETS_KEY_ID).
func (ks *Keys) Environment(endpoint string) []string {
	env := []string{EndpointEnv + "=" + endpoint}
	for i, sp := range ks.specs {
		env = append(env, sp.Env+"="+ks.list[i].ARN())
	}
	return env
}

// byID is the key of that key id, or nil.
func (ks *Keys) byID(id string) *Key {
	for _, k := range ks.list {
		if k.KeyID == id {
			return k
		}
	}
	return nil
}

// resolve finds the key a request's KeyId names, as KMS takes it: a key
// id, a key ARN, an alias name (alias/…) or an alias ARN.
func (ks *Keys) resolve(id string) (*Key, *apiError) {
	prefix := "arn:aws:kms:" + Region + ":" + Account + ":"
	switch {
	case strings.HasPrefix(id, "alias/"):
		for _, k := range ks.list {
			if k.Alias() == id {
				return k, nil
			}
		}
		return nil, fail(errNotFound, "Alias %s%s is not found.", prefix, id)
	case strings.HasPrefix(id, "arn:"):
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok || !(strings.HasPrefix(rest, "alias/") || strings.HasPrefix(rest, "key/")) {
			return nil, fail(errNotFound, "Invalid arn %s", id)
		}
		if name, ok := strings.CutPrefix(rest, "key/"); ok {
			if k := ks.byID(name); k != nil {
				return k, nil
			}
			return nil, fail(errNotFound, "Key '%s' does not exist", id)
		}
		return ks.resolve(rest)
	default:
		if k := ks.byID(id); k != nil {
			return k, nil
		}
		if _, err := uuid.Parse(id); err != nil && !strings.HasPrefix(id, "mrk-") {
			return nil, fail(errNotFound, "Invalid keyId '%s'", id)
		}
		return nil, fail(errNotFound, "Key '%skey/%s' does not exist", prefix, id)
	}
}
