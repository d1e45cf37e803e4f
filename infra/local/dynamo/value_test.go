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
