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
