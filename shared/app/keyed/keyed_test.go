package keyed_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
	"github.com/cloud-agent/control-plane/shared/secrets"
)

// TestKeys: the keys are those WEBHOOK_KEY_ID and WEBHOOK_SECRETS_KEY_ID
// name, on a KMS client of the configuration (its endpoint, region and
// credentials); without either variable, no keys.
func TestKeys(t *testing.T) {
	ts := kms.NewTestServer(t, nil)
	want := secrets.New(kms.Client(ts.URL), "alias/WebhookKey", "alias/WebhookSecretsKey")
	for k, v := range map[string]string{
		"TABLE_NAME": "SessionsTable", "CONFIG_PATH": "/cloud-agent/dev", "AWS_REGION": kms.Region,
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_ENDPOINT_URL_KMS": ts.URL,
		"WEBHOOK_KEY_ID": "alias/WebhookKey", "WEBHOOK_SECRETS_KEY_ID": "alias/WebhookSecretsKey",
	} {
		t.Setenv(k, v)
	}
	c, err := app.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var p app.Parts
	if err := keyed.Keys(c, app.Triggers, &p); err != nil || p.Variables != nil {
		t.Fatal(err, p.Variables)
	}
	loaded := p.Secrets
	ctx := context.Background()
	got, err := loaded.Derive(ctx, "trg_a", 1)
	if w, _ := want.Derive(ctx, "trg_a", 1); err != nil || got != w {
		t.Errorf("derived %q (%v), want %q", got, err, w)
	}
	sealed, err := loaded.Seal(ctx, "trg_a", "whsec_x")
	if opened, _ := want.Open(ctx, "trg_a", sealed); err != nil || opened != "whsec_x" {
		t.Errorf("sealed with the loaded keys, opened %q: %v", opened, err)
	}
	for _, name := range []string{"WEBHOOK_KEY_ID", "WEBHOOK_SECRETS_KEY_ID"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "")
			c, err := app.FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			if err := keyed.Keys(c, app.TriggerHook, &app.Parts{}); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("loaded without %s: %v", name, err)
			}
		})
	}
}

// TestEnvironmentsKey: the environments' function holds the key that
// ENVIRONMENT_SECRETS_KEY_ID names, alone (no webhook key), and needs it.
func TestEnvironmentsKey(t *testing.T) {
	ts := kms.NewTestServer(t, nil)
	for k, v := range map[string]string{
		"TABLE_NAME": "SessionsTable", "CONFIG_PATH": "/cloud-agent/dev", "AWS_REGION": kms.Region,
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_ENDPOINT_URL_KMS": ts.URL,
		"ENVIRONMENT_SECRETS_KEY_ID": "alias/EnvironmentSecretsKey",
	} {
		t.Setenv(k, v)
	}
	c, err := app.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var p app.Parts
	if err := keyed.Keys(c, app.Environments, &p); err != nil || p.Secrets != nil || p.Variables == nil {
		t.Fatalf("%v: %+v", err, p)
	}
	if _, err := p.Variables.Seal(context.Background(), "env_a", "TOKEN", "x"); err != nil {
		t.Errorf("sealed with the loaded key: %v", err)
	}
	if got := ts.Used(); len(got) != 1 || got[0] != "Encrypt alias/EnvironmentSecretsKey" {
		t.Errorf("asked of KMS: %q", got)
	}
	t.Setenv("ENVIRONMENT_SECRETS_KEY_ID", "")
	c, _ = app.FromEnv()
	if err := keyed.Keys(c, app.Environments, &app.Parts{}); err == nil || !strings.Contains(err.Error(), "ENVIRONMENT_SECRETS_KEY_ID") {
		t.Errorf("loaded without the key: %v", err)
	}
}
