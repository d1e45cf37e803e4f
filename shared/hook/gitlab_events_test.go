package hook_test

import (
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
)

// TestGitLabEventNames: a token trigger created through the API that
// lists GitLab's event names (Push Hook, and Merge Request Hook.merge)
// starts a session for a delivery whose X-Gitlab-Event is one, recorded
// as the run's event; another event, or the name in another case, is 202
// and records nothing. name.action matches the body's top-level action
// only: GitLab's own merge request body carries its action in
// object_attributes, so it does not match Merge Request Hook.merge.
func TestGitLabEventNames(t *testing.T) {
	h := harness(t)
	created := h.Do(apitest.Call{Method: "POST", Path: "/v1/triggers", Claims: map[string]string{"sub": "u1"}, Body: `{
		"webhook": {"verify": "token", "events": ["Push Hook", "Merge Request Hook.merge"]},
		"repository": {"type": "gitlab", "url": "https://gitlab.com/group/project.git"},
		"agent": {"mode": "code", "model": "provider/model-name"},
		"prompt": "GitLab sent {{ event }}"}`})
	id, _ := created.Body["triggerId"].(string)
	w, _ := created.Body["webhook"].(map[string]any)
	secret, _ := w["secret"].(string)
	if created.Status != 201 || secret == "" {
		t.Fatalf("create: %d %s", created.Status, created.Raw)
	}
	send := func(event, uuid, body string) apitest.Result {
		return deliver(h, id, map[string]string{"X-Gitlab-Token": secret, "X-Gitlab-Event": event, "X-Gitlab-Event-UUID": uuid}, body)
	}
	gitlabMerge := `{"object_kind":"merge_request","object_attributes":{"action":"merge"}}`
	rows := []struct {
		rule, event, uuid, body string
		status                  int
		runs                    int // the trigger's runs after it
	}{
		{"Push Hook is listed", "Push Hook", "u-1", `{"object_kind":"push"}`, 201, 1},
		{"another case is another event", "push hook", "u-2", `{"object_kind":"push"}`, 202, 1},
		{"Tag Push Hook is not listed", "Tag Push Hook", "u-3", `{"object_kind":"tag_push"}`, 202, 1},
		{"GitLab's merge body has no top-level action", "Merge Request Hook", "u-4", gitlabMerge, 202, 1},
		{"a top-level action matches name.action", "Merge Request Hook", "u-5", `{"action":"merge"}`, 201, 2},
		{"another action does not", "Merge Request Hook", "u-6", `{"action":"close"}`, 202, 2},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			before := len(h.Items())
			res := send(r.event, r.uuid, r.body)
			if res.Status != r.status || r.status == 202 && res.Body["ignored"] != true {
				t.Errorf("%d %s, want %d", res.Status, res.Raw, r.status)
			}
			if r.status == 202 && len(h.Items()) != before {
				t.Errorf("an ignored event wrote %d items", len(h.Items())-before)
			}
			rs := runs(t, h, id)
			if len(rs) != r.runs {
				t.Fatalf("%d runs, want %d", len(rs), r.runs)
			}
			if r.status != 201 {
				return
			}
			// The runs are at the same clock: the delivery's is found by its id.
			found := 0
			for _, run := range rs {
				if run.Delivery != r.uuid {
					continue
				}
				found++
				if run.Event != r.event || run.Prompt != "GitLab sent "+r.event {
					t.Errorf("run %+v", run)
				}
			}
			if found != 1 {
				t.Errorf("%d runs of delivery %s, want 1", found, r.uuid)
			}
		})
	}
}
