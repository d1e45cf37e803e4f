package main

import (
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// TestLinksNoLocalStack: the command, which an operator runs against a
// deployed stack, links nothing of infra/local (its event is built by
// infra/streamevent, the code the local mapping uses) and no SAM
// template model.
func TestLinksNoLocalStack(t *testing.T) {
	out, err := childproc.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/cloud-agent/control-plane/infra/streamevent\n") {
		t.Fatalf("go list -deps gave no dependency list, or one without infra/streamevent:\n%s", out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "goformation") || strings.Contains(pkg+"/", "/infra/local/") {
			t.Errorf("the command links %s", pkg)
		}
	}
}
