// Package secrets holds webhook triggers' secrets, seals environments'
// secret variables (Variables) and derives sessions' tokens
// (SessionTokens), through AWS KMS, the only package that calls it. Webhook secrets: a generated secret is derived, never stored
// (GenerateMac under the stack's HMAC key over webhook.SecretMessage),
// and cached per execution environment by trigger and version; an
// imported one is sealed (Encrypt under the stack's symmetric key, with
// the trigger id as encryption context) and opened again (Decrypt),
// cached per execution environment by trigger and sealed bytes. KMS
// unreachable is service_unavailable; a key that is wrong for the stack
// an internal error.
package secrets

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// maxCached bounds the secrets kept per execution environment, derived
// and opened each; past it a cache starts afresh.
const maxCached = 4096

// contextKey is the encryption context's one member: the trigger's id.
const contextKey = "triggerId"

// Keys are the stack's two keys on one KMS client, built once per
// execution environment. Safe for concurrent use.
type Keys struct {
	client          *kms.Client
	macKey, sealKey string
	derived         cache[version]
	opened          cache[sealed]
}

// version is a generated secret's place: a trigger and its version.
type version struct {
	triggerID string
	n         int
}

// sealed is an imported secret's place: a trigger and its sealed bytes
// (a new import seals anew, so new bytes are a new secret).
type sealed struct {
	triggerID, blob string
}

// cache is secrets in clear by their place, at most maxCached of them.
type cache[K comparable] struct {
	mu sync.Mutex
	m  map[K]string
}

func (c *cache[K]) get(k K) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	return s, ok
}

func (c *cache[K]) put(k K, s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[K]string{}
	}
	c.m[k] = s
}

// New returns the keys macKey (HMAC_256, GENERATE_VERIFY_MAC) and sealKey
// (SYMMETRIC_DEFAULT) on client: ids, ARNs or aliases.
func New(client *kms.Client, macKey, sealKey string) *Keys {
	return &Keys{client: client, macKey: macKey, sealKey: sealKey}
}

// Derive returns trigger triggerID's generated secret of version n:
// whsec_ + the base64 of the MAC that the HMAC key computes over
// webhook:<triggerId>:<n>. It is asked of KMS once per execution
// environment, then cached.
func (k *Keys) Derive(ctx context.Context, triggerID string, n int) (string, error) {
	v := version{triggerID, n}
	if s, ok := k.derived.get(v); ok {
		return s, nil
	}
	out, err := k.client.GenerateMac(ctx, &kms.GenerateMacInput{
		KeyId: aws.String(k.macKey), MacAlgorithm: types.MacAlgorithmSpecHmacSha256,
		Message: webhook.SecretMessage(triggerID, n),
	})
	if err != nil {
		return "", unavailable(err)
	}
	s, err := webhook.SecretFromMAC(out.Mac)
	if err != nil {
		return "", problem.Wrap(problem.InternalError, "An unexpected error occurred.", err) // not the stack's HMAC_256 key
	}
	k.derived.put(v, s)
	return s, nil
}

// Seal encrypts an imported secret of trigger triggerID under the
// symmetric key, with the trigger's id as encryption context: the sealed
// bytes are what the table keeps.
func (k *Keys) Seal(ctx context.Context, triggerID, secret string) ([]byte, error) {
	out, err := k.client.Encrypt(ctx, &kms.EncryptInput{
		KeyId: aws.String(k.sealKey), Plaintext: []byte(secret),
		EncryptionContext: map[string]string{contextKey: triggerID},
	})
	if err != nil {
		return nil, unavailable(err)
	}
	return out.CiphertextBlob, nil
}

// Open decrypts what Seal sealed for trigger triggerID. Sealed bytes of
// another trigger, or changed ones, do not open: an internal error (the
// stored trigger is not what it was written as). It is asked of KMS once
// per execution environment, then cached.
func (k *Keys) Open(ctx context.Context, triggerID string, blob []byte) (string, error) {
	at := sealed{triggerID, string(blob)}
	if s, ok := k.opened.get(at); ok {
		return s, nil
	}
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{
		KeyId: aws.String(k.sealKey), CiphertextBlob: blob,
		EncryptionContext: map[string]string{contextKey: triggerID},
	})
	var invalid *types.InvalidCiphertextException
	switch {
	case errors.As(err, &invalid):
		return "", problem.Wrap(problem.InternalError, "The stored trigger is invalid.", err)
	case err != nil:
		return "", unavailable(err)
	}
	k.opened.put(at, string(out.Plaintext))
	return string(out.Plaintext), nil
}

// unavailable is a KMS call that failed, after the SDK's own retries:
// service_unavailable when a later try may pass (what the SDK retries, a
// deadline, KMS's own fault or a key it cannot reach now), else an
// internal error (a key that is missing, disabled or not allowed: the
// stack, not the request, is wrong).
func unavailable(err error) error {
	var internal *types.KMSInternalException
	var keyDown *types.KeyUnavailableException
	var timeout *types.DependencyTimeoutException
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &internal) || errors.As(err, &keyDown) || errors.As(err, &timeout) ||
		retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return problem.Wrap(problem.ServiceUnavailable, "The service is temporarily unavailable. Try again shortly.", err)
	}
	return problem.Wrap(problem.InternalError, "An unexpected error occurred.", err)
}

// Variables seal environments' secret variables (contract v7): Encrypt
// under the environments' own key, with the encryption context exactly
// {"environmentId": …, "variable": <name>}. Nothing here decrypts them:
// only the execution plane may. Safe for concurrent use.
type Variables struct {
	client *kms.Client
	key    string
}

// NewVariables returns the environments' key (SYMMETRIC_DEFAULT: an id,
// ARN or alias) on client.
func NewVariables(client *kms.Client, key string) *Variables {
	return &Variables{client: client, key: key}
}

// Seal encrypts the value of environment environmentID's secret variable
// name: the ciphertext is what the table keeps.
func (v *Variables) Seal(ctx context.Context, environmentID, name, value string) ([]byte, error) {
	out, err := v.client.Encrypt(ctx, &kms.EncryptInput{
		KeyId: aws.String(v.key), Plaintext: []byte(value),
		EncryptionContext: map[string]string{"environmentId": environmentID, "variable": name},
	})
	if err != nil {
		return nil, unavailable(err)
	}
	return out.CiphertextBlob, nil
}

// SessionTokens derive sessions' tokens (contract v7): GenerateMac under
// the session token key (HMAC_256) over outcome.TokenMessage, asked of
// KMS once per session and execution environment, then cached. Safe for
// concurrent use.
type SessionTokens struct {
	client  *kms.Client
	key     string
	derived cache[string]
}

// NewSessionTokens returns the session token key (an id, ARN or alias)
// on client.
func NewSessionTokens(client *kms.Client, key string) *SessionTokens {
	return &SessionTokens{client: client, key: key}
}

// Token is session sessionID's token.
func (s *SessionTokens) Token(ctx context.Context, sessionID string) (string, error) {
	if t, ok := s.derived.get(sessionID); ok {
		return t, nil
	}
	out, err := s.client.GenerateMac(ctx, &kms.GenerateMacInput{
		KeyId: aws.String(s.key), MacAlgorithm: types.MacAlgorithmSpecHmacSha256, Message: outcome.TokenMessage(sessionID),
	})
	if err != nil {
		return "", unavailable(err)
	}
	t := outcome.TokenOf(out.Mac)
	s.derived.put(sessionID, t)
	return t, nil
}
