package webhook

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestSecretMessage(t *testing.T) {
	const id = "trg_0b3c5d6e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"
	for _, r := range []struct {
		rule    string
		version int
		want    string
	}{
		{"the secret: GenerateMac over webhook:<triggerId>:<secretVersion>", 1, "webhook:" + id + ":1"},
		{"the secret: a rotation's version in decimal", 12, "webhook:" + id + ":12"},
	} {
		if got := string(SecretMessage(id, r.version)); got != r.want {
			t.Errorf("%s: %q, want %q", r.rule, got, r.want)
		}
	}
}

func TestSecretFromMAC(t *testing.T) {
	mac := bytes.Repeat([]byte{0xfb}, 32)
	s, err := SecretFromMAC(mac)
	if err != nil {
		t.Fatal(err)
	}
	// the secret: whsec_ + base64 (standard alphabet, padded: 44
	// characters) of the 32-byte HMAC-SHA256.
	if want := "whsec_" + base64.StdEncoding.EncodeToString(mac); s != want || len(s) != 6+44 || !strings.HasSuffix(s, "=") {
		t.Errorf("%q, want %q", s, want)
	}
	if !strings.Contains(s, "+") && !strings.Contains(s, "/") {
		t.Errorf("%q: the standard alphabet has + and /", s)
	}
	if key, ok := secretKey(s); !ok || !bytes.Equal(key, mac) {
		t.Errorf("a generated secret's key is its MAC: %x %v", key, ok)
	}
	for _, n := range []int{0, 31, 33, 64} {
		if _, err := SecretFromMAC(make([]byte, n)); err == nil {
			t.Errorf("a MAC of %d bytes is no secret", n)
		}
	}
}

func TestSecretImportable(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfe}, n)) }
	for _, r := range []struct {
		rule, secret string
		want         bool
	}{
		{"import: the Standard Webhooks reference secret (24 bytes)", swSecret, true},
		{"import: base64 of 24 bytes", "whsec_" + b64(24), true},
		{"import: base64 of 64 bytes", "whsec_" + b64(64), true},
		{"import: a generated secret's form (32 bytes, padded)", genSecret, true},
		{"import: 23 bytes is too short", "whsec_" + b64(23), false},
		{"import: 65 bytes is too long", "whsec_" + b64(65), false},
		{"import: whsec_ is required", b64(32), false},
		{"import: whsec_ in lowercase only", "WHSEC_" + b64(32), false},
		{"import: nothing after whsec_", "whsec_", false},
		{"import: the standard alphabet, not the URL one", "whsec_" + strings.NewReplacer("+", "-", "/", "_").Replace(b64(32)), false},
		{"import: padded", "whsec_" + strings.TrimRight(b64(32), "="), false},
		{"import: no newline inside (the decoder would skip it)", "whsec_" + b64(24)[:16] + "\n" + b64(24)[16:], false},
		{"import: no space around", "whsec_" + b64(24) + " ", false},
		{"import: not base64", "whsec_" + strings.Repeat("!", 32), false},
	} {
		if got := SecretImportable(r.secret); got != r.want {
			t.Errorf("%s: %v, want %v", r.rule, got, r.want)
		}
	}
}
