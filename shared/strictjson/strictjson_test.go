package strictjson

import (
	"errors"
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
