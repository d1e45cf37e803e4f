package webhook

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix begins every secret's text form.
const SecretPrefix = "whsec_"

// SecretMACSize is the size of the MAC a generated secret is made of: an
// HMAC-SHA256.
const SecretMACSize = 32

// The sizes of a secret's key, its base64 part decoded: what an imported
// secret may hold (a generated one holds SecretMACSize).
const (
	SecretMinKey = 24
	SecretMaxKey = 64
)

// SecretMessage is what the stack's KMS HMAC key signs (GenerateMac) to
// derive a trigger's generated secret of a version:
// "webhook:<triggerId>:<secretVersion>".
func SecretMessage(triggerID string, version int) []byte {
	return []byte("webhook:" + triggerID + ":" + strconv.Itoa(version))
}

// SecretFromMAC is the text form of a generated secret: SecretPrefix and
// the standard, padded base64 of the 32-byte MAC (44 characters). A MAC of
// another size is an error.
func SecretFromMAC(mac []byte) (string, error) {
	if len(mac) != SecretMACSize {
		return "", fmt.Errorf("webhook: a secret's MAC is %d bytes, not %d", len(mac), SecretMACSize)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(mac), nil
}

// SecretImportable reports whether s may be imported as a standard
// trigger's secret: SecretPrefix and the standard, padded base64 of
// SecretMinKey to SecretMaxKey bytes.
func SecretImportable(s string) bool {
	_, ok := secretKey(s)
	return ok
}

// secretKey is a secret's Standard Webhooks key: its base64 part after
// SecretPrefix, decoded, of SecretMinKey to SecretMaxKey bytes.
func secretKey(s string) ([]byte, bool) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	// The length bound comes first, and the alphabet is checked by hand:
	// the decoder would skip newlines.
	if !ok || len(b64) > base64.StdEncoding.EncodedLen(SecretMaxKey) || !isBase64(b64) {
		return nil, false
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < SecretMinKey || len(key) > SecretMaxKey {
		return nil, false
	}
	return key, true
}

func isBase64(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}
