package webhook

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// DeliveryProof is the proof headers a sender of the mode sends with body,
// named as the gateway gives them (lowercase): what tests, local calls and
// examples send. id and at are the Standard Webhooks webhook-id and
// webhook-timestamp; the other modes leave them out. A secret that is no
// Standard Webhooks key, or an unknown mode, is an error.
func DeliveryProof(mode VerifyMode, secret, id string, at time.Time, body []byte) (map[string]string, error) {
	switch mode {
	case VerifyGitHub:
		return map[string]string{"x-hub-signature-256": "sha256=" + hex.EncodeToString(mac([]byte(secret), body))}, nil
	case VerifyStandard:
		key, ok := secretKey(secret)
		if !ok {
			return nil, errors.New("webhook: the secret is not whsec_ and the base64 of 24 to 64 bytes")
		}
		ts := strconv.FormatInt(at.Unix(), 10)
		return map[string]string{
			"webhook-id":        id,
			"webhook-timestamp": ts,
			"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(mac(key, signedContent(id, ts, body))),
		}, nil
	case VerifyToken:
		return map[string]string{"x-gitlab-token": secret}, nil
	}
	return nil, errors.New("webhook: unknown verify mode " + strconv.Quote(string(mode)))
}
