// Package keyed runs the functions that hold webhook secrets (the
// triggers and the trigger hook) as package app builds every function,
// with the secrets' keys on a KMS client: the other functions do not link
// KMS, whose client costs a cold start 15 % of its initialisation
// (docs/performance.md).
package keyed

import (
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/triggerapi"
)

// Run runs the function fn (app.Triggers or app.TriggerHook) with the
// keys the configuration names.
func Run(fn app.Function) { app.RunWith(fn, Keys) }

// Keys are the keys WEBHOOK_KEY_ID and WEBHOOK_SECRETS_KEY_ID name, both
// required, on a KMS client of the configuration. Nothing here does I/O.
func Keys(c app.Config) (triggerapi.Secrets, error) {
	mac, seal, err := c.WebhookKeys()
	if err != nil {
		return nil, err
	}
	return secrets.New(kms.NewFromConfig(c.AWS("KMS")), mac, seal), nil
}
