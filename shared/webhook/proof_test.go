package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GitHub's published example ("Validating webhook deliveries" in GitHub's
// documentation), verbatim; shared/hook's TestGitHubExample runs it end to
// end.
const (
	ghSecret = "It's a Secret to Everybody"
	ghBody   = "Hello, World!"
	ghSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

// The Standard Webhooks reference libraries' own test vectors, verbatim,
// from github.com/standard-webhooks/standard-webhooks:
// libraries/go/webhook_test.go (TestWebhookSign: key, msgID, timestamp,
// payload, expected; TestWebhook: the invalid and the multi signatures) and
// libraries/python/tests/test_webhooks.py (test_sign_function, the same
// vector; test_invalid_signature_raises_error: the signature one character
// off; test_invalid_timestamp_raises_error: "hello").
const (
	swSecret  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swID      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS      = "1614265330"
	swBody    = `{"test": 2432232314}`
	swSig     = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	swInvalid = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	swOneOff  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
	swBadTS   = "hello"
)

// swMulti is the reference tests' "valid multi sig": three wrong entries,
// one of another version, around the valid one.
var swMulti = strings.Join([]string{
	"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
	"v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
	swSig,
	"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
}, " ")

var swAt = time.Unix(1614265330, 0)

// genSecret is a generated secret's form, for the modes that use one.
const genSecret = "whsec_q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA="

// hdr is headers as the gateway gives them, from name/value pairs.
func hdr(kv ...string) map[string]string {
	h := map[string]string{"content-type": "application/json", "user-agent": "test"}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// testSign signs as a sender would, apart from the package's own code.
func testSign(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func ghSign(secret, body string) string {
	return "sha256=" + hex.EncodeToString(testSign([]byte(secret), body))
}

func swSign(secret, id string, at time.Time, body string) (ts, sig string) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		panic(err)
	}
	ts = strconv.FormatInt(at.Unix(), 10)
	return ts, "v1," + base64.StdEncoding.EncodeToString(testSign(key, id+"."+ts+"."+body))
}

type verifyRow struct {
	rule string
	req  VerifyRequest
	want VerifyReason
}

func runVerify(t *testing.T, rows []verifyRow) {
	t.Helper()
	for _, r := range rows {
		if got := Verify(r.req); got != r.want {
			t.Errorf("%s: %s, want %s", r.rule, got, r.want)
		}
		if got := Verify(r.req); got.Proven() != (r.want == VerifyProven || r.want == VerifyProvenPrevious) {
			t.Errorf("%s: Proven() = %v for %s", r.rule, got.Proven(), got)
		}
	}
}

func TestVerifyGitHub(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	gh := func(h map[string]string) VerifyRequest {
		return VerifyRequest{Mode: VerifyGitHub, Secret: ghSecret, Body: []byte(ghBody), Headers: h, Now: now}
	}
	with := func(r VerifyRequest, f func(*VerifyRequest)) VerifyRequest { f(&r); return r }
	upper := "sha256=" + strings.ToUpper(strings.TrimPrefix(ghSig, "sha256="))
	runVerify(t, []verifyRow{
		{"github: GitHub's published example verifies", gh(hdr("x-hub-signature-256", ghSig)), VerifyProven},
		{"github: the key is the whole secret string (a generated one, whsec_ included)",
			with(gh(hdr("x-hub-signature-256", ghSign(genSecret, ghBody))), func(r *VerifyRequest) { r.Secret = genSecret }), VerifyProven},
		{"github: the hex is lowercase", gh(hdr("x-hub-signature-256", upper)), VerifyMismatch},
		{"github: sha256= is required", gh(hdr("x-hub-signature-256", strings.TrimPrefix(ghSig, "sha256="))), VerifyMismatch},
		{"github: a signature of the wrong length is not proven", gh(hdr("x-hub-signature-256", ghSig[:40])), VerifyMismatch},
		{"github: not hex is not proven", gh(hdr("x-hub-signature-256", "sha256=zz")), VerifyMismatch},
		{"github: empty is not proven", gh(hdr("x-hub-signature-256", "")), VerifyMismatch},
		{"github: the raw body is signed, one byte more is wrong",
			with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) { r.Body = []byte(ghBody + "\n") }), VerifyMismatch},
		{"github: another secret is wrong",
			with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) { r.Secret = genSecret }), VerifyMismatch},
		{"github: no X-Hub-Signature-256 is missing", gh(hdr()), VerifyMissing},
		{"github: X-Hub-Signature (SHA-1) is not the proof", gh(hdr("x-hub-signature", "sha1=0000")), VerifyMissing},
		{"proof header given twice: repeats joined by a comma", gh(hdr("x-hub-signature-256", ghSig+","+ghSig)), VerifyRepeated},
		{"proof header given twice: joined by a comma and a space", gh(hdr("x-hub-signature-256", ghSig+", "+ghSig)), VerifyRepeated},
		{"proof header given twice: one name in two spellings", gh(hdr("x-hub-signature-256", ghSig, "X-Hub-Signature-256", ghSig)), VerifyRepeated},
		{"only the trigger's mode counts: a Standard Webhooks proof does not prove a github trigger",
			gh(hdr("webhook-id", swID, "webhook-timestamp", swTS, "webhook-signature", swSig, "x-gitlab-token", ghSecret, "authorization", "Bearer "+ghSecret)), VerifyMissing},
		{"other proof headers are ignored, repeated ones too",
			gh(hdr("x-hub-signature-256", ghSig, "webhook-signature", swSig+","+swSig, "x-gitlab-token", "a,b")), VerifyProven},
		{"the previous secret proves while still valid",
			with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) {
				r.Secret, r.Previous, r.PreviousValidUntil = genSecret, ghSecret, now.Add(time.Hour)
			}), VerifyProvenPrevious},
		{"the previous secret no longer proves once its time is over",
			with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) {
				r.Secret, r.Previous, r.PreviousValidUntil = genSecret, ghSecret, now
			}), VerifyMismatch},
		{"the previous secret with no end time never proves",
			with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) { r.Secret, r.Previous = genSecret, ghSecret }), VerifyMismatch},
		{"the current secret proves beside a previous one",
			with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) {
				r.Previous, r.PreviousValidUntil = genSecret, now.Add(time.Hour)
			}), VerifyProven},
		{"no secret proves nothing", with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) { r.Secret = "" }), VerifyNoSecret},
		{"an unknown mode proves nothing", with(gh(hdr("x-hub-signature-256", ghSig)), func(r *VerifyRequest) { r.Mode = "GitHub" }), VerifyUnknownMode},
	})
}

func TestVerifyStandard(t *testing.T) {
	sw := func(now time.Time, h map[string]string) VerifyRequest {
		return VerifyRequest{Mode: VerifyStandard, Secret: swSecret, Body: []byte(swBody), Headers: h, Now: now}
	}
	with := func(r VerifyRequest, f func(*VerifyRequest)) VerifyRequest { f(&r); return r }
	std := func(sig string) map[string]string {
		return hdr("webhook-id", swID, "webhook-timestamp", swTS, "webhook-signature", sig)
	}
	ts, sig := swSign(genSecret, swID, swAt, swBody)
	runVerify(t, []verifyRow{
		{"standard: the reference libraries' vector verifies", sw(swAt, std(swSig)), VerifyProven},
		{"standard: the reference's invalid signature is wrong", sw(swAt, std(swInvalid)), VerifyMismatch},
		{"standard: the reference's signature one character off is wrong", sw(swAt, std(swOneOff)), VerifyMismatch},
		{"standard: one of the space-separated signatures must match (the reference's multi sig)", sw(swAt, std(swMulti)), VerifyProven},
		{"standard: svix-id, svix-timestamp and svix-signature are aliases",
			sw(swAt, hdr("svix-id", swID, "svix-timestamp", swTS, "svix-signature", swSig)), VerifyProven},
		{"standard: a name and its alias with one value are the header once",
			sw(swAt, hdr("webhook-id", swID, "svix-id", swID, "webhook-timestamp", swTS, "webhook-signature", swSig)), VerifyProven},
		{"proof header given twice: a name and its alias with two values",
			sw(swAt, hdr("webhook-id", swID, "svix-id", "msg_other", "webhook-timestamp", swTS, "webhook-signature", swSig)), VerifyRepeated},
		{"proof header given twice: webhook-signature joined by a comma",
			sw(swAt, std(swSig+","+swInvalid)), VerifyRepeated},
		{"proof header given twice: webhook-signature joined by a comma and a space",
			sw(swAt, std(swInvalid+", "+swSig)), VerifyRepeated},
		{"proof header given twice: webhook-timestamp",
			sw(swAt, hdr("webhook-id", swID, "webhook-timestamp", swTS+","+swTS, "webhook-signature", swSig)), VerifyRepeated},
		{"proof header given twice: webhook-id",
			sw(swAt, hdr("webhook-id", swID+","+swID, "webhook-timestamp", swTS, "webhook-signature", swSig)), VerifyRepeated},
		{"standard: the timestamp at 5 minutes from the clock is accepted", sw(swAt.Add(VerifyTolerance), std(swSig)), VerifyProven},
		{"standard: ahead by 5 minutes is accepted", sw(swAt.Add(-VerifyTolerance), std(swSig)), VerifyProven},
		{"standard: more than 5 minutes old is refused", sw(swAt.Add(VerifyTolerance+time.Second), std(swSig)), VerifyStale},
		{"standard: more than 5 minutes ahead is refused", sw(swAt.Add(-VerifyTolerance-time.Second), std(swSig)), VerifyStale},
		{"standard: the reference's invalid timestamp",
			sw(swAt, hdr("webhook-id", swID, "webhook-timestamp", swBadTS, "webhook-signature", swSig)), VerifyMalformed},
		{"standard: a signed timestamp is digits only",
			sw(swAt, hdr("webhook-id", swID, "webhook-timestamp", "+"+swTS, "webhook-signature", swSig)), VerifyMalformed},
		{"standard: no webhook-id is missing", sw(swAt, hdr("webhook-timestamp", swTS, "webhook-signature", swSig)), VerifyMissing},
		{"standard: no webhook-timestamp is missing", sw(swAt, hdr("webhook-id", swID, "webhook-signature", swSig)), VerifyMissing},
		{"standard: no webhook-signature is missing", sw(swAt, hdr("webhook-id", swID, "webhook-timestamp", swTS)), VerifyMissing},
		{"standard: no v1 signature", sw(swAt, std("v2,"+strings.TrimPrefix(swSig, "v1,")+" v1a,AAAA")), VerifyMalformed},
		{"standard: a partial signature is wrong (the reference's v1,)", sw(swAt, std("v1,")), VerifyMismatch},
		{"standard: a signature that is not base64 is wrong", sw(swAt, std("v1,!!!! v1,===")), VerifyMismatch},
		{"standard: the signed content holds the id", sw(swAt, hdr("webhook-id", swID+"x", "webhook-timestamp", swTS, "webhook-signature", swSig)), VerifyMismatch},
		{"standard: the raw body is signed", with(sw(swAt, std(swSig)), func(r *VerifyRequest) { r.Body = []byte(`{"test":2432232314}`) }), VerifyMismatch},
		{"standard: the key is the base64 part decoded, a generated secret's too",
			with(sw(swAt, hdr("webhook-id", swID, "webhook-timestamp", ts, "webhook-signature", sig)), func(r *VerifyRequest) { r.Secret = genSecret }), VerifyProven},
		{"standard: the previous secret proves while still valid",
			with(sw(swAt, std(swSig)), func(r *VerifyRequest) {
				r.Secret, r.Previous, r.PreviousValidUntil = genSecret, swSecret, swAt.Add(time.Second)
			}), VerifyProvenPrevious},
		{"standard: a secret without whsec_ is no key", with(sw(swAt, std(swSig)), func(r *VerifyRequest) { r.Secret = strings.TrimPrefix(swSecret, "whsec_") }), VerifyNoSecret},
		{"only the trigger's mode counts: GitHub's and GitLab's proofs do not prove a standard trigger",
			sw(swAt, hdr("x-hub-signature-256", ghSign(swSecret, swBody), "x-gitlab-token", swSecret)), VerifyMissing},
	})
}

func TestVerifyToken(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tk := func(h map[string]string) VerifyRequest {
		return VerifyRequest{Mode: VerifyToken, Secret: genSecret, TokenHeader: "X-Webhook-Secret", Body: []byte(`{}`), Headers: h, Now: now}
	}
	with := func(r VerifyRequest, f func(*VerifyRequest)) VerifyRequest { f(&r); return r }
	const other = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	runVerify(t, []verifyRow{
		{"token: X-Gitlab-Token", tk(hdr("x-gitlab-token", genSecret)), VerifyProven},
		{"token: Authorization: Bearer", tk(hdr("authorization", "Bearer "+genSecret)), VerifyProven},
		{"token: the Bearer scheme in any case", tk(hdr("authorization", "bearer "+genSecret)), VerifyProven},
		{"token: the trigger's own header, its name case-insensitive", tk(hdr("x-webhook-secret", genSecret)), VerifyProven},
		{"token: any one of the token headers with the secret proves",
			tk(hdr("authorization", "Basic dXNlcjpwYXNz", "x-gitlab-token", other, "x-webhook-secret", genSecret)), VerifyProven},
		{"token: a wrong token", tk(hdr("x-gitlab-token", other)), VerifyMismatch},
		{"token: a token of another length", tk(hdr("x-gitlab-token", genSecret[:10])), VerifyMismatch},
		{"token: the token is the whole value", tk(hdr("x-gitlab-token", genSecret+" ")), VerifyMismatch},
		{"token: another scheme than Bearer is not the proof", tk(hdr("authorization", "Basic "+genSecret)), VerifyMalformed},
		{"token: no token header is missing", tk(hdr("x-other-secret", genSecret)), VerifyMissing},
		{"token: without its own header the trigger reads X-Gitlab-Token and Authorization only",
			with(tk(hdr("x-webhook-secret", genSecret)), func(r *VerifyRequest) { r.TokenHeader = "" }), VerifyMissing},
		{"proof header given twice: X-Gitlab-Token", tk(hdr("x-gitlab-token", genSecret+","+genSecret)), VerifyRepeated},
		{"proof header given twice: Authorization", tk(hdr("authorization", "Bearer "+genSecret+", Bearer "+genSecret)), VerifyRepeated},
		{"proof header given twice: the trigger's own header", tk(hdr("x-webhook-secret", genSecret+","+genSecret)), VerifyRepeated},
		{"proof header given twice: one of several token headers", tk(hdr("x-gitlab-token", genSecret, "authorization", "Bearer a,Bearer b")), VerifyRepeated},
		{"only the trigger's mode counts: a GitHub signature does not prove a token trigger",
			tk(hdr("x-hub-signature-256", ghSign(genSecret, "{}"))), VerifyMissing},
		{"token: the previous secret proves while still valid",
			with(tk(hdr("x-gitlab-token", other)), func(r *VerifyRequest) { r.Previous, r.PreviousValidUntil = other, now.Add(time.Minute) }), VerifyProvenPrevious},
		{"token: no secret proves nothing, an empty token neither",
			with(tk(hdr("x-gitlab-token", "")), func(r *VerifyRequest) { r.Secret = "" }), VerifyNoSecret},
	})
}

// TestDeliveryProof: what the package signs is what a sender signs, the
// reference vector included, and it verifies.
func TestDeliveryProof(t *testing.T) {
	h, err := DeliveryProof(VerifyStandard, swSecret, swID, swAt, []byte(swBody))
	if err != nil || h["webhook-signature"] != swSig || h["webhook-timestamp"] != swTS || h["webhook-id"] != swID {
		t.Errorf("standard: %v %v", h, err)
	}
	h, err = DeliveryProof(VerifyGitHub, ghSecret, "", time.Time{}, []byte(ghBody))
	if err != nil || h["x-hub-signature-256"] != ghSig {
		t.Errorf("github: %v %v", h, err)
	}
	for _, m := range []VerifyMode{VerifyGitHub, VerifyStandard, VerifyToken} {
		h, err := DeliveryProof(m, genSecret, "msg_1", swAt, []byte(swBody))
		if err != nil {
			t.Fatal(m, err)
		}
		r := VerifyRequest{Mode: m, Secret: genSecret, Body: []byte(swBody), Headers: h, Now: swAt}
		if got := Verify(r); got != VerifyProven {
			t.Errorf("%s: its own proof is %s", m, got)
		}
	}
	if _, err := DeliveryProof(VerifyStandard, "not a secret", "m", swAt, nil); err == nil {
		t.Error("standard: a secret that is no key signs nothing")
	}
	if _, err := DeliveryProof("gitlab", genSecret, "m", swAt, nil); err == nil {
		t.Error("an unknown mode signs nothing")
	}
}

func TestVerifyProofHeader(t *testing.T) {
	for name, want := range map[string]VerifyMode{
		"X-Hub-Signature-256": VerifyGitHub, "X-Hub-Signature": VerifyGitHub,
		"webhook-signature": VerifyStandard, "Svix-Id": VerifyStandard,
		"X-Gitlab-Token": VerifyToken, "Authorization": VerifyToken,
	} {
		if got, ok := VerifyProofHeader(name); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"X-GitHub-Delivery", "X-Webhook-Secret", "Idempotency-Key", "Cookie"} {
		if _, ok := VerifyProofHeader(name); ok {
			t.Errorf("%s is no proof header", name)
		}
	}
	if !VerifyGitHub.Valid() || !VerifyStandard.Valid() || !VerifyToken.Valid() || VerifyMode("").Valid() || VerifyMode("GitHub").Valid() {
		t.Error("Valid: the three modes, as written")
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
