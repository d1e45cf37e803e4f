package lambdarun

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/template"
)

// TestEnvironmentMoreWins: the variables the stack adds (the KMS
// stand-in's) reach the process over a template variable of the same
// name, as a locally resolved Ref would give one.
func TestEnvironmentMoreWins(t *testing.T) {
	fn := template.Function{LogicalID: "F", Environment: map[string]string{"WEBHOOK_KEY_ID": "WebhookKey", "TABLE_NAME": "SessionsTable"}}
	cmd := exec.Command("sh", "-c", `echo "$AWS_ENDPOINT_URL_SSM $AWS_ENDPOINT_URL_KMS $WEBHOOK_KEY_ID $TABLE_NAME"`)
	cmd.Env = Environment(fn, "http://127.0.0.1:8000", "http://127.0.0.1:1", "AWS_ENDPOINT_URL_KMS=http://127.0.0.1:2", "WEBHOOK_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/k")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "http://127.0.0.1:1 http://127.0.0.1:2 arn:aws:kms:us-east-1:000000000000:key/k SessionsTable"; got != want {
		t.Errorf("the function sees %q, want %q", got, want)
	}
}
