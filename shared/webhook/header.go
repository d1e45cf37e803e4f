package webhook

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// header returns the value of a request header and whether it was sent.
// name is lowercase. The gateway lowercases names already; a map that
// holds a name in two spellings holds the header twice, and the values are
// joined by commas, in the order of the spellings, as the gateway joins a
// repeated header's values.
func header(h map[string]string, name string) (string, bool) {
	v, ok := h[name]
	var others []string
	for k := range h {
		if k != name && len(k) == len(name) && strings.EqualFold(k, name) {
			others = append(others, k)
		}
	}
	if len(others) == 0 {
		return v, ok
	}
	slices.Sort(others)
	vals := make([]string, 0, len(others)+1)
	if ok {
		vals = append(vals, v)
	}
	for _, k := range others {
		vals = append(vals, h[k])
	}
	return strings.Join(vals, ","), true
}

// presence is how a proof header was sent.
type presence int

const (
	absent presence = iota
	once
	twice
)

// proofHeader reads a proof header under its name or its aliases. It is
// sent twice when repeatedIn finds a repetition in its value (the gateway
// joins repeats with commas), or when a name and an alias carry different
// values; a name and an alias with the same value are the header once.
func proofHeader(h map[string]string, repeatedIn func(string) bool, names ...string) (string, presence) {
	value, seen := "", false
	for _, name := range names {
		v, ok := header(h, name)
		if !ok {
			continue
		}
		if seen && v != value {
			return "", twice
		}
		value, seen = v, true
	}
	switch {
	case !seen:
		return "", absent
	case repeatedIn(value):
		return "", twice
	}
	return value, once
}

// hasComma is the repetition rule of a proof header whose own value never
// holds a comma: a signature in hex, an id, a timestamp, a token (a
// token-mode secret is a generated one, base64 with no comma).
func hasComma(v string) bool { return strings.IndexByte(v, ',') >= 0 }

// signaturesRepeated is the repetition rule of webhook-signature: a
// space-separated list of "<version>,<base64>", each entry with exactly one
// comma of its own, so that an entry with two or more shows two values
// joined ("v1,a,v1,b" or "v1,a, v1,b").
func signaturesRepeated(v string) bool {
	for _, e := range strings.Fields(v) {
		if strings.Count(e, ",") > 1 {
			return true
		}
	}
	return false
}

// proofHeaders are every mode's proof headers, lowercase. X-Hub-Signature
// (GitHub's SHA-1 signature) is never checked, but it is GitHub's too.
var proofHeaders = map[string]VerifyMode{
	"x-hub-signature-256": VerifyGitHub,
	"x-hub-signature":     VerifyGitHub,
	"webhook-id":          VerifyStandard,
	"webhook-timestamp":   VerifyStandard,
	"webhook-signature":   VerifyStandard,
	"svix-id":             VerifyStandard,
	"svix-timestamp":      VerifyStandard,
	"svix-signature":      VerifyStandard,
	"x-gitlab-token":      VerifyToken,
	"authorization":       VerifyToken,
}

// VerifyProofHeader reports whether a header name (any case) is a proof
// header of a mode, and of which: what a token trigger's own header may
// not be, and what a rendered prompt leaves out.
func VerifyProofHeader(name string) (VerifyMode, bool) {
	m, ok := proofHeaders[strings.ToLower(name)]
	return m, ok
}

// eventHeaders are the modes whose event is a header: its name, lowercase.
var eventHeaders = map[VerifyMode]string{VerifyGitHub: "x-github-event", VerifyToken: "x-gitlab-event"}

// CheckHeaders refuses, with invalid_request naming it, a header that a
// delivery to a trigger of the mode (and token header own, "" for none)
// is judged on and whose value is not valid UTF-8: its Content-Type, the
// mode's proof headers, its event and delivery headers. Such a value is
// never repaired, and U+FFFD counts as not valid: it is what the Lambda
// runtime's JSON decoding puts in place of the bytes before the handler
// sees them. The other modes' headers are not read, and not judged.
func CheckHeaders(mode VerifyMode, own string, headers map[string]string) error {
	var bad []string
	for name, v := range headers {
		if (!utf8.ValidString(v) || strings.ContainsRune(v, utf8.RuneError)) && reads(mode, own, strings.ToLower(name)) {
			bad = append(bad, strings.ToLower(name))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return problem.New(problem.InvalidRequest, "The "+bad[0]+" header is not valid UTF-8.")
}

// reads reports whether a delivery to a trigger of the mode is judged on
// the header name (lowercase).
func reads(mode VerifyMode, own, name string) bool {
	if m, ok := proofHeaders[name]; ok && m == mode || name == "content-type" || name == eventHeaders[mode] || own != "" && strings.EqualFold(name, own) {
		return true
	}
	for _, h := range deliveryHeaders[mode] {
		if h[0] == name {
			return true
		}
	}
	return false
}
