// Package ids holds the contract's rules for ids and short texts: which
// characters, how many. It imports nothing, so that the deciding packages
// and the HTTP layer share the rules without either importing the other.
package ids

import "strings"

// IsID reports whether s looks like a user, org or bot id, in claims and
// bodies: 1 to 128 of A-Z, a-z, 0-9, ".", "_", ":", "@", "|" and "-".
func IsID(s string) bool { return OfChars(s, 128, "._:@|-") }

// IsPathID reports whether s looks like a session or trigger id in a path:
// 1 to 128 of A-Z, a-z, 0-9, "_" and "-".
func IsPathID(s string) bool { return OfChars(s, 128, "_-") }

// IsSessionID reports whether s is a session id as this product makes
// them: workspace_ and a lowercase UUID version 4 of the RFC 4122
// variant, in its 36-character form.
func IsSessionID(s string) bool {
	u, ok := strings.CutPrefix(s, "workspace_")
	if !ok || len(u) != 36 {
		return false
	}
	for i := range len(u) {
		c := u[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return u[14] == '4' && strings.IndexByte("89ab", u[19]) >= 0
}

// OfChars reports whether s is 1 to limit characters, each an ASCII letter,
// an ASCII digit or one of extra (ASCII).
func OfChars(s string, limit int, extra string) bool {
	if len(s) == 0 || len(s) > limit {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// credentialMarkers are the prefixes of the credentials the contract
// refuses in stored text (GitHub's and GitLab's tokens); case-sensitive.
var credentialMarkers = []string{"ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-"}

// HasCredential reports whether s holds one of the credential markers.
func HasCredential(s string) bool {
	for _, m := range credentialMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// RedactCredentials is s with each credential (a marker and the token
// characters that follow it: A-Z, a-z, 0-9, _ and -) as [redacted].
func RedactCredentials(s string) string {
	if !HasCredential(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		marker := ""
		for _, m := range credentialMarkers {
			if strings.HasPrefix(s[i:], m) {
				marker = m
				break
			}
		}
		if marker == "" {
			b.WriteByte(s[i])
			i++
			continue
		}
		i += len(marker)
		for i < len(s) && OfChars(s[i:i+1], 1, "_-") {
			i++
		}
		b.WriteString("[redacted]")
	}
	return b.String()
}
