package local

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/gateway"
)

// readme is the README.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeSection is the README's text under heading, up to the next
// heading of its level or above.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	_, section, ok := strings.Cut(readme(t), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the README has no %q", heading)
	}
	level := strconv.Itoa(strings.Index(heading, " "))
	if end := regexp.MustCompile(`\n#{1,` + level + `} `).FindStringIndex(section); end != nil {
		section = section[:end[0]]
	}
	return section
}

// shBlocks are the sh blocks of a README section, in order.
func shBlocks(section string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)\n *```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1]+"\n")
	}
	return blocks
}

// needTools skips the test when the machine lacks a tool a recipe needs.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the recipe needs %s, which this machine lacks", tool)
		}
	}
}

// runRecipe runs a recipe as pasted, with sh, against the stack s (the
// README's addresses replaced by s's) and the development token in
// TOKEN, and returns what it printed.
func runRecipe(t *testing.T, s *Stack, script string) string {
	t.Helper()
	script = strings.ReplaceAll(script, "http://127.0.0.1:3000", s.APIURL)
	script = strings.ReplaceAll(script, "http://127.0.0.1:8000", s.DynamoURL)
	cmd := exec.Command("sh", "-ec", script)
	cmd.Env = append(os.Environ(), "TOKEN="+gateway.DevToken(map[string]any{"sub": "dev-user", "org_ids": []string{"dev-org"}}), "AWS_PAGER=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the recipe: %v\n%s\n%s", err, script, out)
	}
	return string(out)
}

// TestReadmeSessionRecipe: the README's "Starting a session locally"
// starts, as pasted, a session on the allocation it names, sent in
// runtime.
func TestReadmeSessionRecipe(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl")
	blocks := shBlocks(readmeSection(t, "### Starting a session locally"))
	if len(blocks) != 1 || !strings.Contains(blocks[0], `"runtime":{"sandboxAllocation":"vercel-small"}`) {
		t.Fatalf("the section's blocks: %q", blocks)
	}
	var started struct {
		SessionID string
		Sandbox   struct{ Allocation string }
	}
	out := runRecipe(t, startStack(t, Config{}), blocks[0])
	if err := json.Unmarshal([]byte(out), &started); err != nil || started.SessionID == "" || started.Sandbox.Allocation != "vercel-small" {
		t.Errorf("the start answered %s", out)
	}
}

// TestReadmeTriggerRecipes: the README's "Trying a trigger locally" works
// as pasted: its trigger is made and its ID kept, started now (a manual
// run, listed); made due now in the table with the AWS CLI, the firing
// fires it, a fresh slot (fired 1, no duplicate); moved to a minute just
// ahead, the firing as of that minute fires it again. The schedule's
// example in the list of what make run serves, as of the current minute,
// is taken too.
func TestReadmeTriggerRecipes(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl", "sed", "date", "aws")
	if err := exec.Command("date", "-u", "-d", "+2 minutes").Run(); err != nil {
		t.Skip("the recipe needs GNU date's -d")
	}
	section := readmeSection(t, "### Trying a trigger locally")
	blocks := shBlocks(section)
	if len(blocks) != 3 || !strings.HasPrefix(blocks[0], "ID=$(curl -s -X POST http://127.0.0.1:3000/v1/triggers ") {
		t.Fatalf("the section's blocks: %q", blocks)
	}
	s := startStack(t, Config{})
	fresh := `{"due":1,"fired":1,"duplicates":0,"skipped":0,"fallbacks":0,"failed":0,"timedOut":0}`
	var id string
	// The every-minute schedule fires what is due at each minute: when a
	// minute began while the recipe that makes the trigger due ran, the
	// schedule may have fired it first, and the recipes start again with
	// a new trigger; within one minute, the recipe's firing must fire it.
	for attempt := 1; ; attempt++ {
		// The start now's answer and the runs, then the ID.
		out := runRecipe(t, s, blocks[0]+"echo\necho $ID\n")
		answers, made, _ := strings.Cut(strings.TrimSpace(out), "\n")
		if !strings.HasPrefix(made, "trg_") || !strings.HasPrefix(answers, `{"session":{"sessionId":"workspace_`) ||
			strings.Count(answers, `"kind":"manual"`) != 2 || !strings.Contains(answers, `{"items":[{"kind":"manual"`) {
			t.Fatalf("the first recipe printed %s", out)
		}
		id = made
		began := time.Now().Truncate(time.Minute)
		got := strings.TrimSpace(runRecipe(t, s, "ID="+id+"\n"+blocks[1]))
		if got == fresh {
			break
		}
		if time.Now().Truncate(time.Minute).Equal(began) || attempt == 3 {
			t.Fatalf("the recipe that makes the trigger due answered %s, want %s", got, fresh)
		}
	}
	if got := strings.TrimSpace(runRecipe(t, s, "ID="+id+"\n"+blocks[2])); got != fresh {
		t.Errorf("the recipe that moves the schedule answered %s, want %s", got, fresh)
	}
	status, runs := call(t, "GET", s.APIURL+"/v1/triggers/"+id+"/runs", gateway.DevToken(map[string]any{"sub": "dev-user", "org_ids": []string{"dev-org"}}), "")
	if items, _ := runs["items"].([]any); status != 200 || len(items) != 3 {
		t.Errorf("runs: %d %v", status, runs)
	}
	example := regexp.MustCompile("`(curl -s -X POST http://127.0.0.1:3000/_local/schedule/TriggerFireFunction -d [^`]*)`").FindStringSubmatch(readme(t))
	if example == nil {
		t.Fatal("the README has no example of POST /_local/schedule")
	}
	if got := runRecipe(t, s, example[1]); !strings.HasPrefix(got, `{"due":`) {
		t.Errorf("%s answered %s", example[1], got)
	}
}

// TestReadmeWebhookRecipe: the README's "Try a webhook locally" works as
// pasted against the local stack: its trigger is made, its GitHub
// delivery, signed by openssl with the secret the create answered,
// starts a session once, and the same delivery sent again answers that
// session, replayed; the trigger has one webhook run, whose prompt is the
// one the README says.
func TestReadmeWebhookRecipe(t *testing.T) {
	t.Parallel()
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

// TestReadmeEnvironmentRecipe: the README's "Try an environment locally"
// works as pasted: the environment answers its secret as null, and the
// session starts in it, as the default, on its allocation.
func TestReadmeEnvironmentRecipe(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl", "sed")
	blocks := shBlocks(readmeSection(t, "### Try an environment locally"))
	if len(blocks) != 1 {
		t.Fatalf("the section's blocks: %q", blocks)
	}
	lines := strings.Split(strings.TrimSpace(runRecipe(t, startStack(t, Config{}), blocks[0])), "\n")
	if len(lines) != 2 {
		t.Fatalf("the recipe printed %q", lines)
	}
	var env struct {
		EnvironmentID string
		Variables     map[string]struct {
			Value  *string
			Secret bool
		}
	}
	var started struct {
		Sandbox     struct{ Allocation string }
		Environment struct {
			EnvironmentID, Name string
			Version             int
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &env); err != nil || env.Variables["NPM_TOKEN"].Value != nil || !env.Variables["NPM_TOKEN"].Secret ||
		strings.Contains(lines[0], "npm_local_example") {
		t.Errorf("the environment answered %s", lines[0])
	}
	if err := json.Unmarshal([]byte(lines[1]), &started); err != nil || started.Sandbox.Allocation != "vercel-small" ||
		started.Environment.EnvironmentID != env.EnvironmentID || started.Environment.Name != "Node 22" || started.Environment.Version != 1 {
		t.Errorf("the start answered %s", lines[1])
	}
}

// TestReadmeExecutionPlaneRecipe: the README's walk of a session to the
// execution plane works as pasted: the session's Session Started carries
// its token, which claims it, reads what it was started with and reports
// its outcome; its Session Ended follows, both listed at /_local/events.
func TestReadmeExecutionPlaneRecipe(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl", "sed", "grep", "sleep")
	blocks := shBlocks(readmeSection(t, "### Follow a session to the execution plane locally"))
	if len(blocks) != 1 {
		t.Fatalf("the section's blocks: %q", blocks)
	}
	out := runRecipe(t, startStack(t, Config{}), blocks[0])
	for _, want := range []string{`"claim":{"runner":"laptop-1"`, `"deadline":"`, `"initialTurn":{"prompt":"Fix the build."}`,
		`"outcome":{"status":"completed"`, `"detail-type":"Session Started"`, `"detail-type":"Session Ended"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the recipe printed no %s:\n%s", want, out)
		}
	}
}
