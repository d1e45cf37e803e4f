package strictjson

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckUnique: member names may not repeat, at any depth; names that
// differ only in case are different names.
func TestCheckUnique(t *testing.T) {
	for in, wantDup := range map[string]bool{
		`{"a":1,"b":{"c":[{"d":1},{"d":2}]}}`: false,
		`{"a":1,"A":2}`:                       false,
		`{"a":1,"a":2}`:                       true,
		`{"x":{"a":1,"a":1}}`:                 true,
		`[{"k":1,"k":1}]`:                     true,
		`"s"`:                                 false,
	} {
		err := CheckUnique([]byte(in))
		if errors.Is(err, ErrDuplicateMember) != wantDup || (!wantDup && err != nil) {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, bad := range []string{`{"a":1} {}`, `{"a":}`, `{`, ``} {
		if err := CheckUnique([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzCheckUnique: the walk never panics.
func FuzzCheckUnique(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}]}`, `{"a":1,"a":2}`, `[`, `{"a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { _ = CheckUnique(data) })
}

// TestDepth: nesting up to MaxDepth passes, one more is refused (the walk
// is recursive, and a 256 KiB body could otherwise nest that deep).
func TestDepth(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	if err := CheckUnique(nest(MaxDepth)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	if err := CheckUnique(nest(MaxDepth + 1)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("depth %d: %v", MaxDepth+1, err)
	}
	if err := CheckUnique([]byte(strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1))); !errors.Is(err, ErrTooDeep) {
		t.Errorf("objects: %v", err)
	}
}
