// Package keyed runs the functions that hold KMS keys as package app
// builds every function: the triggers and the trigger hook with the
// webhook secrets' keys, the environments' function with the key that
// seals secret variables, the session events function with the session
// token key (and the sessions' bus, on an EventBridge client no other
// function links), each on a KMS client. The other functions do not
// link KMS, whose client costs a cold start 15 % of its initialisation
// (docs/performance.md).
package keyed

import (
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/bus"
	"github.com/cloud-agent/control-plane/shared/secrets"
)

// Run runs the function fn (app.Triggers, app.TriggerHook,
// app.Environments, app.SessionEvents or app.Runtime) with the keys the
// configuration names.
func Run(fn app.Function) {
	app.RunWith(fn, func(c app.Config, p *app.Parts) error { return Keys(c, fn, p) })
}

// Keys puts on p the keys of fn that the configuration names, on a KMS
// client of the configuration: ENVIRONMENT_SECRETS_KEY_ID for the
// environments' function, SESSION_TOKEN_KEY_ID (with the bus and the
// API's URL) for the session events function, SESSION_TOKEN_KEY_ID and
// ENVIRONMENT_SECRETS_KEY_ID (named, never used) for the runtime routes, WEBHOOK_KEY_ID and
// WEBHOOK_SECRETS_KEY_ID for the others, all required. Nothing here does
// I/O.
func Keys(c app.Config, fn app.Function, p *app.Parts) error {
	switch fn.ID {
	case app.SessionEvents.ID:
		key, name, url, err := c.Announcing()
		if err == nil {
			p.Tokens = secrets.NewSessionTokens(kms.NewFromConfig(c.AWS("KMS")), key)
			p.Bus, p.APIURL = bus.New(eventbridge.NewFromConfig(c.AWS("EVENTBRIDGE")), name), url
		}
		return err
	case app.Runtime.ID:
		token, sealed, err := c.RuntimeKeys()
		if err == nil {
			p.Tokens, p.SecretsKey = secrets.NewSessionTokens(kms.NewFromConfig(c.AWS("KMS")), token), sealed
		}
		return err
	case app.Environments.ID:
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
