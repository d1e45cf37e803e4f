package secrets_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	awskms "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/secrets"
)

// standIn serves the local KMS with new keys, counting its requests.
func standIn(t *testing.T) (*secrets.Keys, *kms.Keys, *atomic.Int64, *kms.TestServer) {
	t.Helper()
	ts := kms.NewTestServer(t, nil)
	return secrets.New(kms.Client(ts.URL), "alias/WebhookKey", "alias/WebhookSecretsKey"), ts.Keys, &ts.Calls, ts
}

// TestDerive: a generated secret is whsec_ and the base64 of the HMAC key's
// MAC over webhook:<triggerId>:<version> (44 characters after the
// prefix), the same for the same trigger and version, another for
// another, and asked of KMS once per execution environment.
func TestDerive(t *testing.T) {
	keys, ks, calls, _ := standIn(t)
	ctx := context.Background()
	s1, err := keys.Derive(ctx, "trg_a", 1)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, ks.Key("WebhookKey").Material)
	mac.Write([]byte("webhook:trg_a:1"))
	if want := "whsec_" + base64.StdEncoding.EncodeToString(mac.Sum(nil)); s1 != want || len(s1) != len("whsec_")+44 {
		t.Errorf("secret %s, want %s", s1, want)
	}
	again, _ := keys.Derive(ctx, "trg_a", 1)
	v2, _ := keys.Derive(ctx, "trg_a", 2)
	other, _ := keys.Derive(ctx, "trg_b", 1)
	if again != s1 || v2 == s1 || other == s1 {
		t.Errorf("again %s, version 2 %s, another trigger %s", again, v2, other)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d KMS calls, want 3 (the second derivation of trg_a:1 is cached)", n)
	}
}

// TestSealOpen: an imported secret is sealed for its trigger and opens for
// it alone; a key the stack lacks, or of the wrong use, is an internal
// error; KMS down is service_unavailable.
func TestSealOpen(t *testing.T) {
	keys, _, _, srv := standIn(t)
	ctx := context.Background()
	sealed, err := keys.Seal(ctx, "trg_a", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := keys.Open(ctx, "trg_a", sealed); err != nil || got != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Errorf("opened %q: %v", got, err)
	}
	if _, err := keys.Open(ctx, "trg_b", sealed); problem.CodeOf(err) != problem.InternalError {
		t.Errorf("another trigger's: %v", err)
	}
	if got := srv.Used(); !slices.Equal(got, []string{"Decrypt alias/WebhookSecretsKey", "Encrypt alias/WebhookSecretsKey"}) {
		t.Errorf("asked of KMS: %q", got)
	}
	wrong := secrets.New(kms.Client(srv.URL), "alias/NoSuchKey", "alias/WebhookKey")
	if _, err := wrong.Derive(ctx, "trg_c", 1); problem.CodeOf(err) != problem.InternalError {
		t.Errorf("a key the stack does not have: %v", err)
	}
	if _, err := wrong.Seal(ctx, "trg_c", "whsec_x"); problem.CodeOf(err) != problem.InternalError {
		t.Errorf("the HMAC key to encrypt: %v", err)
	}
	srv.Close()
	if _, err := keys.Derive(ctx, "trg_c", 1); problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Errorf("KMS down: %v", err)
	}
}

// TestOpenCached: an imported secret is opened by KMS once per execution
// environment, by trigger and sealed bytes: the same bytes again cost no
// call, even with KMS down; a new import's bytes, or another trigger, are
// asked again.
func TestOpenCached(t *testing.T) {
	keys, _, calls, srv := standIn(t)
	ctx := context.Background()
	first, _ := keys.Seal(ctx, "trg_a", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	again, _ := keys.Seal(ctx, "trg_a", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	before := calls.Load()
	for range 3 {
		if s, err := keys.Open(ctx, "trg_a", first); err != nil || s != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
			t.Fatalf("opened %q: %v", s, err)
		}
	}
	if _, err := keys.Open(ctx, "trg_a", again); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Open(ctx, "trg_b", first); problem.CodeOf(err) != problem.InternalError {
		t.Errorf("another trigger's bytes, cached for trg_a: %v", err)
	}
	if n := calls.Load() - before; n != 3 {
		t.Errorf("%d KMS calls, want 3: once per trigger and sealed bytes", n)
	}
	srv.Close()
	if _, err := keys.Open(ctx, "trg_a", first); err != nil {
		t.Errorf("a cached secret with KMS down: %v", err)
	}
}

// TestSealVariable: an environment's secret variable is encrypted under
// the environments' key with the context exactly {environmentId,
// variable}: it decrypts with that context alone; KMS down is
// service_unavailable.
func TestSealVariable(t *testing.T) {
	ts := kms.NewTestServer(t, nil)
	vars := secrets.NewVariables(kms.Client(ts.URL), "alias/EnvironmentSecretsKey")
	ctx := context.Background()
	sealed, err := vars.Seal(ctx, "env_a", "NPM_TOKEN", "npm_secret")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "npm_secret") {
		t.Error("the ciphertext holds the value")
	}
	open := func(context map[string]string) (string, error) {
		out, err := kms.Client(ts.URL).Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: sealed, EncryptionContext: context})
		if err != nil {
			return "", err
		}
		return string(out.Plaintext), nil
	}
	if got, err := open(map[string]string{"environmentId": "env_a", "variable": "NPM_TOKEN"}); err != nil || got != "npm_secret" {
		t.Errorf("opened %q: %v", got, err)
	}
	for _, other := range []map[string]string{
		{"environmentId": "env_b", "variable": "NPM_TOKEN"}, {"environmentId": "env_a", "variable": "OTHER"}, {"environmentId": "env_a"}, nil,
	} {
		if _, err := open(other); err == nil {
			t.Errorf("opened with the context %v", other)
		}
	}
	if got := ts.Used(); !slices.Contains(got, "Encrypt alias/EnvironmentSecretsKey") {
		t.Errorf("asked of KMS: %q", got)
	}
	ts.Close()
	if _, err := vars.Seal(ctx, "env_a", "NPM_TOKEN", "npm_secret"); problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Errorf("KMS down: %v", err)
	}
}
