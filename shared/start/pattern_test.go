package start

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestKeyAndRepoChecks: the operation key and GitHub repository checks
// accept exactly what the patterns of the contract accept.
func TestKeyAndRepoChecks(t *testing.T) {
	for _, c := range []struct {
		name     string
		valid    func(string) bool
		pattern  *regexp.Regexp
		alphabet string
		limit    int
	}{
		{"operationKey", validOperationKey, regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`), "aZ09_.:-/@ é\n", 128},
		{"repository.repo", validGitHubRepo, regexp.MustCompile(`^[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}$`), "aZ09-._//:é", 141},
	} {
		tries := []string{"", "a/b", "/b", "a/", "a//b", "a/b/c", strings.Repeat("a", 39) + "/b", strings.Repeat("a", 40) + "/b",
			"a/" + strings.Repeat("b", 100), "a/" + strings.Repeat("b", 101), "a-b/c.d_e", "a.b/c", "a_b/c", strings.Repeat("k", 128), strings.Repeat("k", 129)}
		for b := range 256 {
			tries = append(tries, string([]byte{byte(b)}), "a/"+string([]byte{byte(b)}), string([]byte{byte(b)})+"/a")
		}
		chars := []rune(c.alphabet)
		r := rand.New(rand.NewPCG(3, 5))
		for range 5000 {
			var sb strings.Builder
			for range r.IntN(c.limit + 8) {
				sb.WriteRune(chars[r.IntN(len(chars))])
			}
			tries = append(tries, sb.String())
		}
		for _, s := range tries {
			if c.valid(s) != c.pattern.MatchString(s) {
				t.Errorf("%s %q: %v, the pattern says %v", c.name, s, c.valid(s), !c.valid(s))
			}
		}
	}
}
