package main

import (
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// TestLinksNoLocalStack: the audit, which can rewrite a production table's
// triggers, links no local stack: no SAM template model (goformation),
// nothing of infra/local, the embedded DynamoDB endpoint included.
func TestLinksNoLocalStack(t *testing.T) {
	out, err := childproc.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 || !strings.Contains(string(out), "github.com/cloud-agent/control-plane/infra/audit\n") {
		t.Fatalf("go list -deps gave no dependency list:\n%s", out)
	}
	for _, pkg := range deps {
		if strings.Contains(pkg, "goformation") || strings.Contains(pkg+"/", "/infra/local/") || strings.Contains(pkg, "minidyn") {
			t.Errorf("the audit links %s", pkg)
		}
	}
}
