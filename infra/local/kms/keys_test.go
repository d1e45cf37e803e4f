package kms

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms/schemas"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/traits"
)

// TestStatuses: the status of each KMS error the stand-in answers is the
// one AWS's model of KMS gives it (its httpError trait, as the SDK's
// schemas carry it).
func TestStatuses(t *testing.T) {
	for typ, s := range map[string]*smithy.Schema{
		errNotFound:          schemas.NotFoundException,
		errInvalidKeyUsage:   schemas.InvalidKeyUsageException,
		errInvalidCiphertext: schemas.InvalidCiphertextException,
		errIncorrectKey:      schemas.IncorrectKeyException,
		errDryRun:            schemas.DryRunOperationException,
		errInternal:          schemas.KMSInternalException,
	} {
		trait, ok := smithy.SchemaTrait[*traits.HTTPError](s)
		if !ok {
			t.Errorf("%s: the model gives no status", typ)
			continue
		}
		if statuses[typ] != trait.Code {
			t.Errorf("%s: the stand-in answers %d, the model says %d", typ, statuses[typ], trait.Code)
		}
	}
}

func readMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestKeyFile: the first Open makes the file (mode 0600, its folder too)
// with a key of each Spec; the next reads the same keys; a file that lacks
// a key gets it and keeps the others; one readable by others is set to
// 0600.
func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".local", "kms-keys.json")
	first, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := readMode(t, path); m != 0o600 {
		t.Errorf("the key file's mode is %o", m)
	}
	data, _ := os.ReadFile(path)
	for _, sp := range Specs {
		k := first.Key(sp.LogicalID)
		if k == nil || k.KeySpec != sp.KeySpec || k.KeyUsage != sp.KeyUsage || len(k.Material) != 32 || !strings.Contains(string(data), k.KeyID) {
			t.Errorf("%s: %+v", sp.LogicalID, k)
		}
	}
	if bytes.Equal(first.Key("WebhookKey").Material, first.Key("WebhookSecretsKey").Material) {
		t.Error("two keys share their material")
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range Specs {
		a, b := first.Key(sp.LogicalID), again.Key(sp.LogicalID)
		if a.KeyID != b.KeyID || !bytes.Equal(a.Material, b.Material) || !a.Created.Equal(b.Created) {
			t.Errorf("%s changed from one Open to the next", sp.LogicalID)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("reading the file rewrote it")
	}

	// A file with WebhookKey alone gets WebhookSecretsKey.
	if err := (&Keys{list: first.list[:1]}).write(path, true); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	grown, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := readMode(t, path); m != 0o600 {
		t.Errorf("the key file's mode is %o after a key was added", m)
	}
	if k := grown.Key("WebhookKey"); k.KeyID != first.Key("WebhookKey").KeyID || !bytes.Equal(k.Material, first.Key("WebhookKey").Material) {
		t.Error("WebhookKey changed when WebhookSecretsKey was added")
	}
	if k := grown.Key("WebhookSecretsKey"); k == nil || k.KeyID == first.Key("WebhookSecretsKey").KeyID {
		t.Errorf("WebhookSecretsKey: %+v", k)
	}
	reread, err := Open(path)
	if err != nil || reread.Key("WebhookSecretsKey").KeyID != grown.Key("WebhookSecretsKey").KeyID {
		t.Errorf("the added key was not kept: %v", err)
	}

	// Readable by others: set to 0600.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err != nil {
		t.Fatal(err)
	}
	if m := readMode(t, path); m != 0o600 {
		t.Errorf("a file readable by others kept mode %o", m)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.new-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestKeyFileConcurrentFirstRun: two stacks started at once on no file
// end with the same keys.
func TestKeyFileConcurrentFirstRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kms-keys.json")
	var wg sync.WaitGroup
	got := make([]*Keys, 4)
	errs := make([]error, 4)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = Open(path) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got[i].Key("WebhookKey").KeyID != got[0].Key("WebhookKey").KeyID {
			t.Errorf("start %d has other keys than start 0", i)
		}
	}
}

// TestBadKeyFile: a file the stand-in cannot trust stops the start, names
// the file and says how to start afresh; the file is left as it was.
func TestBadKeyFile(t *testing.T) {
	ks, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := ks.write(good, false); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	text := string(data)
	mac := ks.Key("WebhookKey")
	for _, tc := range []struct{ name, content, want string }{
		{"not JSON", "{", "unexpected EOF"},
		{"an unknown member", strings.Replace(text, `"keys"`, `"extra":1,"keys"`, 1), "unknown"},
		{"a member in another case", strings.Replace(text, `"keyId"`, `"KeyId"`, 1), "unknown"},
		{"a key the template lacks", strings.Replace(text, `"WebhookKey"`, `"HookKey"`, 1), `"HookKey" is not a key of the template`},
		{"a key twice", strings.Replace(text, `"WebhookSecretsKey"`, `"WebhookKey"`, 1), "WebhookKey is there twice"},
		{"another kind of key", strings.Replace(text, `"HMAC_256"`, `"HMAC_512"`, 1), "WebhookKey is HMAC_512/GENERATE_VERIFY_MAC, the template's is HMAC_256/GENERATE_VERIFY_MAC"},
		{"a key id in capitals", strings.Replace(text, mac.KeyID, strings.ToUpper(mac.KeyID), 1), "is not a key id"},
		{"a key id of another key", strings.Replace(text, ks.Key("WebhookSecretsKey").KeyID, mac.KeyID, 1), "is another key's"},
		{"short material", strings.Replace(text, `"material": "`, `"material": "AAAA`, 1), "bytes of material"},
		{"a null key", `{"keys":[null]}`, "key 0 is null"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it away") {
			t.Errorf("%s: %v", tc.name, err)
		}
		if got, _ := os.ReadFile(path); string(got) != tc.content {
			t.Errorf("%s: the file changed", tc.name)
		}
	}
}

// TestEnvironment: every function gets the endpoint and each key's ARN
// under its Spec's variable.
func TestEnvironment(t *testing.T) {
	ks, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	env := ks.Environment("http://127.0.0.1:4599")
	want := []string{
		"AWS_ENDPOINT_URL_KMS=http://127.0.0.1:4599",
		"WEBHOOK_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/" + ks.Key("WebhookKey").KeyID,
		"WEBHOOK_SECRETS_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/" + ks.Key("WebhookSecretsKey").KeyID,
		"ENVIRONMENT_SECRETS_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/" + ks.Key("EnvironmentSecretsKey").KeyID,
		"SESSION_TOKEN_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/" + ks.Key("SessionTokenKey").KeyID,
	}
	if !slices.Equal(env, want) {
		t.Errorf("got %v\nwant %v", env, want)
	}
}
