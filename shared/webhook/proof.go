package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// VerifyMode is the one proof a webhook trigger accepts, its "verify",
// fixed when the trigger is created.
type VerifyMode string

// The verify modes.
const (
	// VerifyGitHub is X-Hub-Signature-256: sha256=<hex HMAC-SHA256>, keyed
	// by the whole secret string. It is the default.
	VerifyGitHub VerifyMode = "github"
	// VerifyStandard is Standard Webhooks 1.0 (webhook-id,
	// webhook-timestamp, webhook-signature; svix-* as aliases), keyed by
	// the secret's base64 part decoded.
	VerifyStandard VerifyMode = "standard"
	// VerifyToken is the secret itself, in X-Gitlab-Token, in
	// Authorization: Bearer or in the trigger's own header.
	VerifyToken VerifyMode = "token"
)

// Valid reports whether m is one of the verify modes.
func (m VerifyMode) Valid() bool {
	return m == VerifyGitHub || m == VerifyStandard || m == VerifyToken
}

// VerifyTolerance is how far a Standard Webhooks timestamp may be from the
// clock, either way.
const VerifyTolerance = 5 * time.Minute

// VerifyRequest is what a delivery's proof is checked on.
type VerifyRequest struct {
	Mode VerifyMode
	// Secret is the trigger's current secret ("whsec_…").
	Secret string
	// Previous is the secret before the last rotation, or "". It proves a
	// delivery while Now is before PreviousValidUntil (a zero time: never).
	Previous           string
	PreviousValidUntil time.Time
	// TokenHeader is the trigger's own header for VerifyToken, or "";
	// its name is matched case-insensitively.
	TokenHeader string
	// Body is the raw body, base64-decoded when the event said so.
	Body []byte
	// Headers are the request's headers as the gateway gives them.
	Headers map[string]string
	// Now is the clock.
	Now time.Time
}

// VerifyReason is the outcome of Verify, for the log: it never holds a
// secret or a header's value.
type VerifyReason string

// The outcomes of Verify. Only VerifyProven and VerifyProvenPrevious prove
// the delivery.
const (
	VerifyProven         VerifyReason = "proven"
	VerifyProvenPrevious VerifyReason = "proven_by_previous_secret"
	VerifyUnknownMode    VerifyReason = "unknown_verify"
	VerifyNoSecret       VerifyReason = "no_usable_secret"
	VerifyMissing        VerifyReason = "missing_proof"
	VerifyRepeated       VerifyReason = "repeated_proof_header"
	VerifyMalformed      VerifyReason = "malformed_proof"
	VerifyStale          VerifyReason = "timestamp_out_of_tolerance"
	VerifyMismatch       VerifyReason = "wrong_proof"
)

// Proven reports whether the outcome proves the delivery.
func (r VerifyReason) Proven() bool { return r == VerifyProven || r == VerifyProvenPrevious }

// Verify checks a delivery's proof by the trigger's own mode only (the
// proof headers of the other modes are ignored), with the current secret
// and the previous one while it is valid: either proves it.
//
// A proof header given twice is refused (VerifyRepeated). The gateway
// joins a repeated header's values with commas, so a repetition shows as a
// comma the header's own value never holds: any comma in
// X-Hub-Signature-256, webhook-id, webhook-timestamp, X-Gitlab-Token,
// Authorization or the trigger's own header (a token-mode secret is a
// generated one, with no comma), and in webhook-signature, whose
// space-separated entries are "<version>,<base64>", an entry with more than
// one comma. A name in two spellings in the map is the header twice, and
// so are a Standard Webhooks name and its svix- alias with different
// values (with the same value they are the header once).
//
// Every comparison is in constant time, and a signature of the wrong
// length or encoding simply does not match.
func Verify(r VerifyRequest) VerifyReason {
	secrets := []string{r.Secret, ""}
	if r.Previous != "" && r.Now.Before(r.PreviousValidUntil) {
		secrets[1] = r.Previous
	}
	var match []bool
	var why VerifyReason
	switch r.Mode {
	case VerifyGitHub:
		match, why = verifyGitHub(r, secrets)
	case VerifyStandard:
		match, why = verifyStandard(r, secrets)
	case VerifyToken:
		match, why = verifyToken(r, secrets)
	default:
		return VerifyUnknownMode
	}
	switch {
	case why != "":
		return why
	case match[0]:
		return VerifyProven
	case match[1]:
		return VerifyProvenPrevious
	}
	return VerifyMismatch
}

// verifyGitHub: X-Hub-Signature-256 is "sha256=" and the lowercase hex of
// HMAC-SHA256(secret, body), compared as text, so that uppercase hex or
// another prefix is simply wrong.
func verifyGitHub(r VerifyRequest, secrets []string) ([]bool, VerifyReason) {
	got, p := proofHeader(r.Headers, hasComma, "x-hub-signature-256")
	if why := presenceReason(p); why != "" {
		return nil, why
	}
	if secrets[0] == "" && secrets[1] == "" {
		return nil, VerifyNoSecret
	}
	match := make([]bool, 2)
	for i, s := range secrets {
		if s != "" {
			want := "sha256=" + hex.EncodeToString(mac([]byte(s), r.Body))
			match[i] = hmac.Equal([]byte(got), []byte(want))
		}
	}
	return match, ""
}

// verifyStandard: the signed content is "<id>.<timestamp>.<body>", the
// timestamp (whole seconds) within VerifyTolerance of the clock, and one
// of the signature's "v1,<base64>" entries the HMAC-SHA256 of the content
// under the secret's key; entries of other versions are skipped.
func verifyStandard(r VerifyRequest, secrets []string) ([]bool, VerifyReason) {
	id, pID := proofHeader(r.Headers, hasComma, "webhook-id", "svix-id")
	ts, pTS := proofHeader(r.Headers, hasComma, "webhook-timestamp", "svix-timestamp")
	sig, pSig := proofHeader(r.Headers, signaturesRepeated, "webhook-signature", "svix-signature")
	for _, p := range []presence{pID, pTS, pSig} {
		if p == twice {
			return nil, VerifyRepeated
		}
	}
	if id == "" || ts == "" || strings.TrimSpace(sig) == "" {
		return nil, VerifyMissing
	}
	at, ok := unixSeconds(ts)
	if !ok {
		return nil, VerifyMalformed
	}
	if d := r.Now.Sub(at); d > VerifyTolerance || d < -VerifyTolerance {
		return nil, VerifyStale
	}
	var macs [2][]byte
	for i, s := range secrets {
		if key, ok := secretKey(s); ok {
			macs[i] = mac(key, signedContent(id, ts, r.Body))
		}
	}
	if macs[0] == nil && macs[1] == nil {
		return nil, VerifyNoSecret
	}
	match, v1 := make([]bool, 2), false
	for _, entry := range strings.Fields(sig) {
		version, b64, _ := strings.Cut(entry, ",")
		if version != "v1" {
			continue
		}
		v1 = true
		got, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		for i, m := range macs {
			match[i] = match[i] || m != nil && hmac.Equal(got, m)
		}
	}
	if !v1 {
		return nil, VerifyMalformed
	}
	return match, ""
}

// verifyToken: any of X-Gitlab-Token, Authorization's Bearer token and the
// trigger's own header that carries the secret proves the delivery. The
// values are compared by their SHA-256, in constant time, so that not even
// the secret's length shows.
func verifyToken(r VerifyRequest, secrets []string) ([]bool, VerifyReason) {
	names := []string{"x-gitlab-token", "authorization"}
	if own := strings.ToLower(r.TokenHeader); own != "" && own != names[0] && own != names[1] {
		names = append(names, own)
	}
	var tokens []string
	sent := false
	for _, name := range names {
		v, p := proofHeader(r.Headers, hasComma, name)
		switch {
		case p == twice:
			return nil, VerifyRepeated
		case p == absent:
			continue
		}
		sent = true
		if name == "authorization" {
			scheme, token, _ := strings.Cut(v, " ")
			if !strings.EqualFold(scheme, "bearer") {
				continue
			}
			v = strings.TrimLeft(token, " ")
		}
		tokens = append(tokens, v)
	}
	switch {
	case !sent:
		return nil, VerifyMissing
	case len(tokens) == 0:
		return nil, VerifyMalformed
	case secrets[0] == "" && secrets[1] == "":
		return nil, VerifyNoSecret
	}
	match := make([]bool, 2)
	for _, t := range tokens {
		got := sha256.Sum256([]byte(t))
		for i, s := range secrets {
			want := sha256.Sum256([]byte(s))
			match[i] = match[i] || s != "" && hmac.Equal(got[:], want[:])
		}
	}
	return match, ""
}

func presenceReason(p presence) VerifyReason {
	switch p {
	case absent:
		return VerifyMissing
	case twice:
		return VerifyRepeated
	}
	return ""
}

func mac(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

func signedContent(id, ts string, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(ts)+2+len(body))
	b = append(append(append(append(b, id...), '.'), ts...), '.')
	return append(b, body...)
}

// unixSeconds reads a timestamp of 1 to 18 ASCII digits (no sign, no
// fraction) as seconds since the epoch.
func unixSeconds(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > 18 || strings.TrimLeft(s, "0123456789") != "" {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}
