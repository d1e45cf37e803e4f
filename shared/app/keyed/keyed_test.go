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
	loaded, err := keyed.Keys(c)
	if err != nil {
		t.Fatal(err)
	}
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
			if _, err := keyed.Keys(c); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("loaded without %s: %v", name, err)
			}
		})
	}
}
