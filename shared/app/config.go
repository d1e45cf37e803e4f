package app

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/settings"
)

// The environment variables the template sets.
const (
	varTable             = "TABLE_NAME"
	varConfig            = "CONFIG_PATH"
	varConfigTTL         = "CONFIG_TTL_SECONDS"
	varConcurrency       = "FIRING_CONCURRENCY"
	varWebhookKey        = "WEBHOOK_KEY_ID"
	varWebhookSecretsKey = "WEBHOOK_SECRETS_KEY_ID"
	varEnvironmentsKey   = "ENVIRONMENT_SECRETS_KEY_ID"
	varSessionTokenKey   = "SESSION_TOKEN_KEY_ID"
	varEventBus          = "EVENT_BUS_NAME"
	varAPIURL            = "API_URL"
)

// varFunction and varVersion are the function's name and the version of
// it that runs, which Lambda sets.
const (
	varFunction = "AWS_LAMBDA_FUNCTION_NAME"
	varVersion  = "AWS_LAMBDA_FUNCTION_VERSION"
)

// unnamed is the Function dimension of a function whose name is not set,
// unpublished the Version dimension of one whose version is not: the
// version Lambda gives a function's code before any is published.
const (
	unnamed     = "local"
	unpublished = "$LATEST"
)

// services are the SDK ids, in capitals, of the services the functions
// call: their endpoints are read with the rest of the configuration.
var services = []string{"DYNAMODB", "SSM", "KMS", "EVENTBRIDGE"}

// Variables are the names of the variables the template sets for the
// function id: every function's, the firing's concurrency, and the keys
// of the functions that hold webhook secrets.
func Variables(id string) []string {
	vars := []string{varTable, varConfig, varConfigTTL}
	switch id {
	case TriggerFire.ID:
		vars = append(vars, varConcurrency)
	case Triggers.ID, TriggerHook.ID:
		vars = append(vars, varWebhookKey, varWebhookSecretsKey)
	case Environments.ID:
		vars = append(vars, varEnvironmentsKey)
	case SessionEvents.ID:
		vars = append(vars, varSessionTokenKey, varEventBus, varAPIURL)
	case Runtime.ID:
		vars = append(vars, varSessionTokenKey, varEnvironmentsKey)
	}
	return vars
}

// Config is everything a function reads from its environment, read once
// (FromEnv): what the template sets, and what Lambda sets (the region,
// the credentials of the function's role, the function's name and
// version), and the endpoints that AWS_ENDPOINT_URL_<service> or
// AWS_ENDPOINT_URL set, as the SDK's default configuration reads them. It
// does not load that default configuration: its credential chain links
// the SDK's STS, SSO and sign-in clients, whose initialisation and file
// reads cost every cold start more than the rest of this package
// (docs/performance.md), and a function's credentials are always in its
// environment.
type Config struct {
	Table        string        // TABLE_NAME
	SettingsPath string        // CONFIG_PATH
	SettingsTTL  time.Duration // CONFIG_TTL_SECONDS
	// Concurrency bounds how many due triggers the firing fires at a time
	// (FIRING_CONCURRENCY).
	Concurrency int
	// webhookKey and webhookSecretsKey are the keys of webhook secrets
	// (WEBHOOK_KEY_ID, WEBHOOK_SECRETS_KEY_ID), set for the triggers and
	// the trigger hook only (WebhookKeys).
	webhookKey, webhookSecretsKey string
	// environmentsKey seals environments' secret variables
	// (ENVIRONMENT_SECRETS_KEY_ID), set for the environments' function
	// only (EnvironmentsKey).
	environmentsKey string
	// sessionTokenKey derives sessions' tokens (SESSION_TOKEN_KEY_ID),
	// eventBus is the sessions' bus (EVENT_BUS_NAME) and apiURL the API's
	// URL (API_URL), set for the session events function (Announcing).
	sessionTokenKey, eventBus, apiURL string
	// Function and Version are the metrics' dimensions: the function's
	// name (the local stack sets it to the logical id), "local" where it
	// is not set, as when a bootstrap is run by hand; the version the
	// alias live ran, "$LATEST" where it is not set.
	Function, Version string
	Region            string
	Credentials       aws.CredentialsProvider
	// endpoints are the services' endpoints the environment sets, by SDK
	// id in capitals.
	endpoints map[string]string
	// http is every client's (HTTPClient).
	http aws.HTTPClient
}

// FromEnv reads the configuration from the environment. The region and
// the credentials are those Lambda sets (AWS_REGION, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). Nothing here does I/O.
func FromEnv() (Config, error) { return FromLookup(os.Getenv) }

// FromLookup reads the configuration as FromEnv does, each variable's
// value from getenv: a command that runs a function's code outside
// Lambda gives it the environment it has there.
func FromLookup(getenv func(string) string) (Config, error) {
	c := Config{
		Table: getenv(varTable), SettingsPath: getenv(varConfig),
		webhookKey: getenv(varWebhookKey), webhookSecretsKey: getenv(varWebhookSecretsKey),
		environmentsKey: getenv(varEnvironmentsKey),
		sessionTokenKey: getenv(varSessionTokenKey), eventBus: getenv(varEventBus), apiURL: getenv(varAPIURL),
		Function: cmp.Or(getenv(varFunction), unnamed), Version: cmp.Or(getenv(varVersion), unpublished),
		Region: cmp.Or(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
	}
	if c.Table == "" || c.SettingsPath == "" {
		return Config{}, fmt.Errorf("%s and %s must be set", varTable, varConfig)
	}
	var err error
	if c.SettingsTTL, err = settings.ParseTTL(getenv(varConfigTTL)); err != nil {
		return Config{}, err
	}
	if c.Concurrency, err = firing.ParseConcurrency(getenv(varConcurrency)); err != nil {
		return Config{}, fmt.Errorf("%s must be %w", varConcurrency, err)
	}
	key, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if c.Region == "" || key == "" || secret == "" {
		return Config{}, errors.New("AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
	}
	c.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(key, secret, getenv("AWS_SESSION_TOKEN")))
	c.http, c.endpoints = HTTPClient(), map[string]string{}
	if getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") != "true" {
		for _, s := range services {
			if u := cmp.Or(getenv("AWS_ENDPOINT_URL_"+s), getenv("AWS_ENDPOINT_URL")); u != "" {
				c.endpoints[s] = u
			}
		}
	}
	return c, nil
}

// EnvironmentsKey is the key that seals environments' secret variables,
// required by the function that writes environments.
func (c Config) EnvironmentsKey() (string, error) {
	if c.environmentsKey == "" {
		return "", fmt.Errorf("%s must be set", varEnvironmentsKey)
	}
	return c.environmentsKey, nil
}

// Announcing is what the session events function needs: the session
// token key, the sessions' bus and the API's URL, all required.
func (c Config) Announcing() (tokenKey, eventBus, apiURL string, err error) {
	if c.sessionTokenKey == "" || c.eventBus == "" || c.apiURL == "" {
		return "", "", "", fmt.Errorf("%s, %s and %s must be set", varSessionTokenKey, varEventBus, varAPIURL)
	}
	return c.sessionTokenKey, c.eventBus, c.apiURL, nil
}

// RuntimeKeys are the runtime routes' keys: the session token key, which
// derives tokens, and the environments' key, whose ARN the launch read
// names beside each secret's ciphertext; both required.
func (c Config) RuntimeKeys() (token, sealed string, err error) {
	if c.sessionTokenKey == "" || c.environmentsKey == "" {
		return "", "", fmt.Errorf("%s and %s must be set", varSessionTokenKey, varEnvironmentsKey)
	}
	return c.sessionTokenKey, c.environmentsKey, nil
}

// WebhookKeys are the keys of webhook secrets, both required by the
// functions that hold them.
func (c Config) WebhookKeys() (mac, seal string, err error) {
	if c.webhookKey == "" || c.webhookSecretsKey == "" {
		return "", "", fmt.Errorf("%s and %s must be set", varWebhookKey, varWebhookSecretsKey)
	}
	return c.webhookKey, c.webhookSecretsKey, nil
}

// AWS is the configuration of a client of the AWS service whose SDK id
// is service, in capitals (one of services): the region and credentials,
// the functions' one HTTP client, and the endpoint the environment sets,
// if any.
func (c Config) AWS(service string) aws.Config {
	cfg := aws.Config{Region: c.Region, Credentials: c.Credentials, HTTPClient: c.http}
	if u, ok := c.endpoints[service]; ok {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg
}

// attemptTimeout bounds one attempt of an AWS request.
const attemptTimeout = 2 * time.Second

// maxIdleConns is how many idle connections to one endpoint the clients
// keep: the SDK keeps 10, fewer than the firing's requests at once
// (FIRING_CONCURRENCY, at most firing.MaxConcurrency, the same number).
const maxIdleConns = 256

// writeBuffer is the size of a connection's write buffer: more than a
// request of the functions', headers and body.
const writeBuffer = 64 << 10

// HTTPClient is the functions' HTTP client of the AWS services. A stuck
// attempt gives way to the SDK's retries well within the function's
// timeout. Connections are kept for as many requests at once as the
// firing sends (FIRING_CONCURRENCY), so that none is opened again per
// request; and a request, headers and body, goes out in one write (the
// transport's 4 KiB buffer takes two or three for a firing's
// transaction).
func HTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTimeout(attemptTimeout).
		WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = maxIdleConns
			t.WriteBufferSize = writeBuffer
		})
}
