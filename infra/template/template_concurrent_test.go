package template

import (
	"sync"
	"testing"
)

// TestLoadConcurrently: templates load from several goroutines at once
// (tests in parallel, each harness reading its own) without a data race
// in goformation's tag resolvers; under -race this fails without the lock
// of processYAML.
func TestLoadConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := Load("../../template.yaml"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
