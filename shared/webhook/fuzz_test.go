package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/problem"
)

var fuzzModes = []VerifyMode{VerifyGitHub, VerifyStandard, VerifyToken, "", "GitHub"}

var reasons = map[VerifyReason]bool{
	VerifyProven: true, VerifyProvenPrevious: true, VerifyUnknownMode: true, VerifyNoSecret: true, VerifyMissing: true,
	VerifyRepeated: true, VerifyMalformed: true, VerifyStale: true, VerifyMismatch: true,
}

// fuzzHeaders builds headers from "name: value" lines, as the gateway
// would give them or not (names in any case).
func fuzzHeaders(lines string) map[string]string {
	h := map[string]string{}
	for _, line := range strings.Split(lines, "\n") {
		name, value, _ := strings.Cut(line, ":")
		h[name] = strings.TrimPrefix(value, " ")
	}
	return h
}

func addSeeds(f *testing.F) {
	seeds := []string{
		"x-hub-signature-256: " + ghSig + "\nx-github-event: ping\nx-github-delivery: d-1",
		"x-hub-signature-256: " + ghSig + "," + ghSig,
		"webhook-id: " + swID + "\nwebhook-timestamp: " + swTS + "\nwebhook-signature: " + swMulti,
		"svix-id: " + swID + "\nsvix-timestamp: " + swTS + "\nsvix-signature: " + swSig + ",v1,x\nwebhook-id: other",
		"webhook-id: a\nwebhook-timestamp: 99999999999999999999\nwebhook-signature: v1,!!",
		"x-gitlab-token: " + genSecret + "\nx-gitlab-event: Push Hook\nx-gitlab-event-uuid: u-1",
		"authorization: Bearer " + genSecret + "\nX-Webhook-Secret: a,b\nidempotency-key: k",
		"Authorization: bearer\nX-Hub-Signature-256: sha256=",
	}
	for i, s := range seeds {
		f.Add(uint8(i), s, "X-Webhook-Secret", []byte(swBody), int64(i*60))
	}
	f.Add(uint8(0), "", "", []byte(ghBody), int64(0))
	f.Add(uint8(1), "webhook-signature: v1,"+strings.Repeat("A", 200), "", []byte("\xff"), int64(-400))
}

// FuzzVerify: any headers, body and secret are judged without a panic, to
// one of the known reasons; a delivery the test signs itself, among any
// other headers, always verifies.
func FuzzVerify(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, pick uint8, lines, own string, body []byte, skew int64) {
		mode := fuzzModes[int(pick)%len(fuzzModes)]
		h := fuzzHeaders(lines)
		anySecret := own
		for _, secret := range []string{swSecret, genSecret, anySecret, ""} {
			r := VerifyRequest{Mode: mode, Secret: secret, Previous: anySecret, PreviousValidUntil: swAt.Add(time.Hour),
				TokenHeader: own, Body: body, Headers: h, Now: swAt.Add(time.Duration(skew) * time.Second)}
			if got := Verify(r); !reasons[got] {
				t.Fatalf("%s: reason %q", mode, got)
			}
		}
		signed(t, pick, h, own, body, skew)
	})
}

// signed signs body as a sender of each mode would, with a secret from the
// input, among the fuzzed headers bar the mode's own proof headers, and
// checks that it verifies.
func signed(t *testing.T, pick uint8, h map[string]string, own string, body []byte, skew int64) {
	sum := sha256.Sum256([]byte(own))
	secret := "whsec_" + base64.StdEncoding.EncodeToString(sum[:])
	now := swAt.Add(time.Duration(skew%301) * time.Second)
	ownHeader := "x-webhook-secret"
	if len(own) <= 100 && isTokenName(own) {
		if _, proof := VerifyProofHeader(own); !proof {
			ownHeader = own
		}
	}
	for _, mode := range []VerifyMode{VerifyGitHub, VerifyStandard, VerifyToken} {
		sent := map[string]string{}
		for k, v := range h {
			if m, proof := VerifyProofHeader(k); (!proof || m != mode) && !strings.EqualFold(k, ownHeader) {
				sent[k] = v
			}
		}
		key := secret
		switch mode {
		case VerifyGitHub:
			key = own + "k" // github keys on any string
			sent["x-hub-signature-256"] = ghSign(key, string(body))
		case VerifyStandard:
			id := strings.ReplaceAll(own, ",", "") + "m"
			ts, sig := swSign(secret, id, swAt, string(body))
			sent["webhook-id"], sent["webhook-timestamp"], sent["webhook-signature"] = id, ts, "v2,x "+sig
		case VerifyToken:
			switch pick % 3 {
			case 0:
				sent["x-gitlab-token"] = secret
			case 1:
				sent["authorization"] = "Bearer " + secret
			default:
				sent[strings.ToLower(ownHeader)] = secret
			}
		}
		r := VerifyRequest{Mode: mode, Secret: key, TokenHeader: ownHeader, Body: body, Headers: sent, Now: now}
		if got := Verify(r); got != VerifyProven {
			t.Fatalf("%s: a signed delivery is %s (headers %q)", mode, got, sent)
		}
	}
}

func isTokenName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == ""
}

// FuzzDeliveryOf: reading any delivery never panics; a refusal is
// invalid_request; an accepted delivery's id and key follow their rules.
func FuzzDeliveryOf(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, pick uint8, lines, _ string, body []byte, _ int64) {
		mode := fuzzModes[int(pick)%len(fuzzModes)]
		d, err := DeliveryOf(mode, fuzzHeaders(lines), body)
		if err != nil {
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.InvalidRequest {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		if d.ID != "" && !deliveryID(d.ID) {
			t.Fatalf("delivery id %q", d.ID)
		}
		switch {
		case mode == VerifyGitHub && len(d.Key) != 64:
			t.Fatalf("github key %q", d.Key)
		case mode != VerifyGitHub && d.Key != d.ID:
			t.Fatalf("%s: key %q, id %q", mode, d.Key, d.ID)
		}
		k := d.OperationKey("trg_1")
		if d.Key != "" && (!strings.HasPrefix(k, "trigger:trg_1:hook:") || len(k) != len("trigger:trg_1:hook:")+32) {
			t.Fatalf("operation key %q", k)
		}
		d.Listed([]string{d.Event, d.Event + "." + d.Action})
	})
}
