package docs_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// TestJSONv2Only: the functions and what they share parse and write JSON
// with encoding/json/v2 alone: v1 matches member names without regard to
// case and keeps the last of repeated ones. (Tests may use v1 to read.)
func TestJSONv2Only(t *testing.T) {
	out, err := childproc.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../shared/...", "../functions/...").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list gave too few packages:\n%s", out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if slices.Contains(f[1:], "encoding/json") {
			t.Errorf("%s imports encoding/json", f[0])
		}
	}
}
