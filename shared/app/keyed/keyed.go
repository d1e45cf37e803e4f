// Package keyed runs the functions that hold KMS keys as package app
// builds every function: the triggers and the trigger hook with the
// webhook secrets' keys, the environments' function with the key that
// seals secret variables, each on a KMS client. The other functions do not
// link KMS, whose client costs a cold start 15 % of its initialisation
// (docs/performance.md).
package keyed

import (
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/secrets"
)

// Run runs the function fn (app.Triggers, app.TriggerHook or
// app.Environments) with the keys the configuration names.
func Run(fn app.Function) {
	app.RunWith(fn, func(c app.Config, p *app.Parts) error { return Keys(c, fn, p) })
}

// Keys puts on p the keys of fn that the configuration names, on a KMS
// client of the configuration: ENVIRONMENT_SECRETS_KEY_ID for the
// environments' function, WEBHOOK_KEY_ID and WEBHOOK_SECRETS_KEY_ID for
// the others, all required. Nothing here does I/O.
func Keys(c app.Config, fn app.Function, p *app.Parts) error {
	if fn.ID == app.Environments.ID {
		key, err := c.EnvironmentsKey()
		if err == nil {
			p.Variables = secrets.NewVariables(kms.NewFromConfig(c.AWS("KMS")), key)
		}
		return err
	}
	mac, seal, err := c.WebhookKeys()
	if err == nil {
		p.Secrets = secrets.New(kms.NewFromConfig(c.AWS("KMS")), mac, seal)
	}
	return err
}
