// Package testkit holds the small helpers that tests of several packages
// share and that need nothing of the project: it imports none of it, so
// that any package's own tests may use it.
package testkit

import "encoding/json/v2"

// JSON is v as JSON, its members sorted, for comparing and printing in
// tests; a value that does not marshal panics, failing the test.
func JSON(v any) string {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic(err)
	}
	return string(b)
}
