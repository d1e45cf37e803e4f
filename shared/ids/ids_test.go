package ids

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestIDs: IsID and IsPathID accept exactly what the patterns of the
// contract accept.
func TestIDs(t *testing.T) {
	for _, c := range []struct {
		name    string
		is      func(string) bool
		pattern *regexp.Regexp
	}{
		{"IsID", IsID, regexp.MustCompile(`^[A-Za-z0-9._:@|-]{1,128}$`)},
		{"IsPathID", IsPathID, regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)},
	} {
		for _, s := range candidates("aZ09._:@|-/+ é\x00\n", 128) {
			if c.is(s) != c.pattern.MatchString(s) {
				t.Errorf("%s(%q) = %v, the pattern says %v", c.name, s, c.is(s), !c.is(s))
			}
		}
	}
}

// candidates are strings to judge: around the length limit, each byte
// alone and after a letter, and random strings of the alphabet's
// characters.
func candidates(alphabet string, limit int) []string {
	out := []string{"", strings.Repeat("a", limit), strings.Repeat("a", limit+1), "a\n", "\na"}
	for b := range 256 {
		out = append(out, string([]byte{byte(b)}), "a"+string([]byte{byte(b)}))
	}
	chars := []rune(alphabet)
	r := rand.New(rand.NewPCG(8, 7))
	for range 5000 {
		var sb strings.Builder
		for range r.IntN(limit + 8) {
			sb.WriteRune(chars[r.IntN(len(chars))])
		}
		out = append(out, sb.String())
	}
	return out
}

// TestHasCredential: every marker of the contract counts wherever it
// stands in the text, case-sensitive; text without one does not.
func TestHasCredential(t *testing.T) {
	for _, r := range []struct {
		s    string
		want bool
	}{
		{"ghp_x", true}, {"token gho_x", true}, {"ghs_", true}, {"a ghu_b", true},
		{"github_pat_11", true}, {"glpat-x", true},
		{"GHP_1", false}, {"gh_p", false}, {"github-pat", false}, {"", false}, {"glpat_x", false},
	} {
		if got := HasCredential(r.s); got != r.want {
			t.Errorf("HasCredential(%q) = %v, want %v", r.s, got, r.want)
		}
	}
}

// TestRedactCredentials: each credential, its marker and the token that
// follows, is [redacted]; the text around it stays, and text without one
// is as it was.
func TestRedactCredentials(t *testing.T) {
	for _, r := range []struct{ s, want string }{
		{"clone failed: bad token ghp_abc123XYZ for acme", "clone failed: bad token [redacted] for acme"},
		{"glpat-x_y-z.", "[redacted]."},
		{"a github_pat_11AB and gho_Q", "a [redacted] and [redacted]"},
		{"ghp_", "[redacted]"},
		{"no token here; GHP_x is not one", "no token here; GHP_x is not one"},
		{"é ghs_1é", "é [redacted]é"},
	} {
		if got := RedactCredentials(r.s); got != r.want {
			t.Errorf("RedactCredentials(%q) = %q, want %q", r.s, got, r.want)
		}
	}
}

// TestIsSessionID: workspace_ and a lowercase UUID v4 (RFC 4122 variant),
// nothing else.
func TestIsSessionID(t *testing.T) {
	for s, want := range map[string]bool{
		"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00": true,
		"workspace_0B8F3A1E-8A51-4C1B-9A57-3E0B3C2D1F00": false, // upper case
		"workspace_0b8f3a1e-8a51-3c1b-9a57-3e0b3c2d1f00": false, // version 3
		"workspace_0b8f3a1e-8a51-4c1b-7a57-3e0b3c2d1f00": false, // another variant
		"workspace_0b8f3a1e8a514c1b9a573e0b3c2d1f00":     false, // no hyphens
		"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f0":  false,
		"agent_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f00":     false,
		"workspace_0b8f3a1e-8a51-4c1b-9a57-3e0b3c2d1f0g": false,
		"": false,
	} {
		if IsSessionID(s) != want {
			t.Errorf("%q: %v", s, !want)
		}
	}
}
