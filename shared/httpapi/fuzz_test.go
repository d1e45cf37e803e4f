package httpapi

import (
	"testing"

	"github.com/cloud-agent/control-plane/shared/ids"
)

// FuzzCallerFrom: reading claims never panics, and an accepted caller's ids
// all match the claim pattern.
func FuzzCallerFrom(f *testing.F) {
	for _, s := range [][2]string{{"u1", `["o1","o2"]`}, {"u1", "[o1 o2]"}, {"u1", "o1, o2"}, {"", ""}, {"u1", "[\"o1\""}, {"u1", "[\"o\xff\"]"}, {"u1", `["\ud800"]`}} {
		f.Add(s[0], s[1], "b1", "cloud-agent:admin")
	}
	f.Fuzz(func(t *testing.T, sub, orgs, bot, scope string) {
		ev := event("GET", "/", map[string]string{"sub": sub, "org_ids": orgs, "bot_id": bot, "scope": scope}, "")
		c, err := callerFrom(&ev)
		if err != nil {
			return
		}
		for _, id := range append([]string{c.UserID}, c.OrgIDs...) {
			if !ids.IsID(id) {
				t.Fatalf("accepted id %q", id)
			}
		}
	})
}
