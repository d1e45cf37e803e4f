package kms

import (
	"encoding/json"
	"testing"
)

var fuzzTargets = []string{"GenerateMac", "Encrypt", "Decrypt", "DescribeKey", "VerifyMac"}

// FuzzAnswer: whatever the body, of whichever call, the stand-in answers
// without panicking: a known status, a JSON object, an error with its
// __type and a message.
func FuzzAnswer(f *testing.F) {
	ks, err := Generate()
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{Keys: ks}
	mac, sym := ks.Key("WebhookKey"), ks.Key("WebhookSecretsKey")
	blob, err := seal(sym, []byte("whsec_x"), map[string]string{"triggerId": "trg_1"})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := json.Marshal(blob)
	for i, body := range []string{
		`{"KeyId":"` + mac.KeyID + `","Message":"bQ==","MacAlgorithm":"HMAC_SHA_256"}`,
		`{"KeyId":"alias/WebhookSecretsKey","Plaintext":"cA==","EncryptionContext":{"triggerId":"trg_1"}}`,
		`{"CiphertextBlob":` + string(b) + `,"EncryptionContext":{"triggerId":"trg_1"}}`,
		`{"KeyId":"` + sym.ARN() + `"}`,
		`{"CiphertextBlob":` + string(b) + `,"DryRun":true,"DryRunModifiers":["IGNORE_CIPHERTEXT"],"KeyId":"` + sym.KeyID + `"}`,
		`{"KeyId":null,"GrantTokens":[""],"EncryptionContext":{"":""}}`,
		``, `[]`, `null`, `{"Message":1}`,
	} {
		f.Add(uint8(i), []byte(body))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		status, out := s.Answer(targetPrefix+fuzzTargets[int(which)%len(fuzzTargets)], body)
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("not a JSON object: %q", out)
		}
		if status == 200 {
			return
		}
		typ, _ := m["__type"].(string)
		if _, ok := statuses[typ]; !ok || statuses[typ] != status {
			t.Fatalf("status %d with %q", status, out)
		}
		if _, ok := m["message"].(string); !ok {
			t.Fatalf("no message: %q", out)
		}
	})
}
