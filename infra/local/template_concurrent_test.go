package local

import (
	"sync"
	"testing"
)

// TestLoadTemplateConcurrently: templates load from several goroutines at
// once (parallel tests, the audit beside a stack) without a data race in
// goformation's tag resolvers; under -race this fails without the lock of
// ProcessYAML.
func TestLoadTemplateConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := LoadTemplate("../../template.yaml"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
