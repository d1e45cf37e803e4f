package local

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/gateway"
)

// TestReadmeWebhookRecipe: the README's "Try a webhook locally" works as
// pasted against the local stack: its trigger is made, its GitHub
// delivery, signed by openssl with the secret the create answered,
// starts a session once, and the same delivery sent again answers that
// session, replayed; the trigger has one webhook run, whose prompt is the
// one the README says.
func TestReadmeWebhookRecipe(t *testing.T) {
	for _, tool := range []string{"sh", "curl", "openssl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the recipe needs %s, which this machine lacks", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Try a webhook locally")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	script, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`the README has no "Try a webhook locally" with a sh block`)
	}
	s := startStack(t, Config{})
	script = strings.ReplaceAll(script, "http://127.0.0.1:3000", s.APIURL)
	// The delivery once more, as a redelivery sends it.
	delivery := script[strings.LastIndex(script, "curl -s -X POST "+s.APIURL+"/v1/hooks/"):]
	token := gateway.DevToken(map[string]any{"sub": "dev-user", "org_ids": []string{"dev-org"}})
	cmd := exec.Command("sh", "-ec", script+"echo\n"+delivery+"echo\necho $ID\n")
	cmd.Env = append(os.Environ(), "TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the recipe: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("the recipe printed:\n%s", out)
	}
	var first, again struct {
		SessionID string `json:"sessionId"`
		Replayed  bool   `json:"replayed"`
	}
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &again)
	if first.SessionID == "" || first.Replayed || again.SessionID != first.SessionID || !again.Replayed {
		t.Errorf("the delivery and its redelivery:\n%s", out)
	}
	status, runs := call(t, "GET", s.APIURL+"/v1/triggers/"+lines[2]+"/runs", token, "")
	items, _ := runs["items"].([]any)
	if status != 200 || len(items) != 1 {
		t.Fatalf("runs: %d %v", status, runs)
	}
	run, _ := items[0].(map[string]any)
	if run["kind"] != "webhook" || run["prompt"] != `Review pull request 7: "Add a README"` || run["event"] != "pull_request" ||
		run["delivery"] != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || run["sessionId"] != first.SessionID {
		t.Errorf("the run: %v", run)
	}
}
