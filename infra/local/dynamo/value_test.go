package dynamo

import "testing"

// TestNumberSize: a number's size is one byte per two significant digits,
// plus one, its leading and trailing zeros trimmed (Developer Guide, "Item
// sizes").
func TestNumberSize(t *testing.T) {
	for _, row := range []struct {
		n    string
		want int
	}{{"0", 1}, {"1", 2}, {"12", 2}, {"123", 3}, {"1200", 2}, {"0.0012", 2}, {"-1200.5", 4}, {"100000000000000000000", 2}} {
		c, err := parseNumber(row.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := numberSize(c); got != row.want {
			t.Errorf("%s: %d bytes, want %d", row.n, got, row.want)
		}
	}
}

// TestCanonicalInteger: an integer taken as it is, in canonical form, is
// what reading it digit by digit makes of it; any other is read so.
func TestCanonicalInteger(t *testing.T) {
	for _, s := range []string{"0", "7", "-7", "1796218697882", "-0", "007", "+7", "1e3", "1.0", "", "-",
		"12345678901234567890123456789012345678", "123456789012345678901234567890123456789", "1000000000000000000000000000000000000000"} {
		d, ok := scanDecimal(s)
		if canonicalInteger(s) && (!ok || d.check() != nil || d.String() != s) {
			t.Errorf("%q is taken as it is, but reads as %q", s, d.String())
		}
	}
}
