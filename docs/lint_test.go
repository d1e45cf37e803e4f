package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// redocly is the linter, pinned: one release's recommended rules.
const redocly = "@redocly/cli@2.77.0"

// lintTimeout bounds npx's fetch and run of the linter: a registry that
// answers fetches it within seconds, and one that cannot be reached fails
// at once (a skip); a lint still running then fails the test.
const lintTimeout = 3 * time.Minute

// keptWarnings are the warnings the document keeps, and why.
var keptWarnings = map[string]string{
	"info-license": "the API is the product's own, offered under no license",
}

// unreachable is how npm says that it cannot reach the registry.
var unreachable = regexp.MustCompile(`npm error (code (ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH)|network)`)

// TestRedoclyLint lints the document as tools from outside the project read
// it, with Redocly's recommended rules: no errors, and no warnings but the
// kept ones. npx fetches the linter from the npm registry once; it is
// skipped, saying so, without npx or when the registry cannot be reached.
func TestRedoclyLint(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not on the PATH: docs/openapi.yaml is not linted with " + redocly)
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), lintTimeout)
	defer cancel()
	cmd := childproc.CommandContext(ctx, npx, "--yes", redocly, "lint", "--format=json", "openapi.yaml")
	// A linter in npm's cache runs without asking the registry again, and
	// a registry that cannot be reached fails at once, not after retries.
	cmd.Env = append(os.Environ(), "npm_config_prefer_offline=true", "npm_config_fetch_retries=0",
		"npm_config_fetch_timeout=30000", "npm_config_update_notifier=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var report struct {
		Problems []struct {
			RuleID, Severity, Message string
			Location                  []struct{ Pointer string }
		}
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		switch {
		case unreachable.Match(stderr.Bytes()):
			t.Skipf("the npm registry cannot be reached, so %s is not fetched and docs/openapi.yaml is not linted:\n%s", redocly, unreachable.Find(stderr.Bytes()))
		case ctx.Err() != nil:
			t.Fatalf("npx did not fetch and run %s within %v", redocly, lintTimeout)
		}
		t.Fatalf("%s: %v\n%s", redocly, err, stderr.String())
	}
	for _, p := range report.Problems {
		if p.Severity == "warn" && keptWarnings[p.RuleID] != "" {
			continue
		}
		t.Errorf("%s %s at %v: %s", p.Severity, p.RuleID, p.Location, p.Message)
	}
}
