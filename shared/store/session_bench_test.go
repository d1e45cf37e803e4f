package store

import (
	"encoding/json/v2"
	"testing"

	"github.com/cloud-agent/control-plane/shared/allocation"
)

// BenchmarkDecodeAndView: a stored session, current and legacy, from its
// item to the lookup's JSON.
func BenchmarkDecodeAndView(b *testing.B) {
	p := allocation.DefaultPolicy()
	for _, name := range []string{"session-v2-current", "session-v1-flat"} {
		item := fixture(b, "items", name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec, err := DecodeSession(item)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(rec.View(p)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
