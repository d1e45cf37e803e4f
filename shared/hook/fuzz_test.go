package hook_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/shared/trigger"
	"github.com/cloud-agent/control-plane/shared/webhook"
)

// FuzzUnproven: whatever a stranger sends without the trigger's secret
// (any path suffix, content type, proof headers, body, base64 or not), to
// a trigger of any verify mode, the answer is a 4xx, never a start and
// never a 5xx, and nothing is written. (The target calls the handler
// itself: the harness's calls belong to the test that made it.)
func FuzzUnproven(f *testing.F) {
	f.Add(uint8(0), "", "application/json", "sha256=00", "", "", `{"action":"opened"}`, false)
	f.Add(uint8(1), "x", "text/plain", "", "Bearer whsec_x", "msg_1", "Hello, World!", false)
	f.Add(uint8(2), "", "image/png", "sha256=zz", "", "", "\xff\xfe", true)
	f.Add(uint8(0), "/deeper", "multipart/form-data", "", "", "", "", false)
	f.Add(uint8(0), "", "", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "", "", "Hello, World!", true)
	f.Add(uint8(1), "", "application/json", "v1,AAAA v1,BBBB", "", "msg_2", `{"type":"x"}`, false)
	h := harness(f)
	var ids []string
	for _, m := range []webhook.VerifyMode{webhook.VerifyGitHub, webhook.VerifyStandard, webhook.VerifyToken} {
		ids = append(ids, newHook(f, h, func(tr *trigger.Trigger) { tr.Webhook.Verify = m }).ID)
	}
	count := func() int32 {
		out, err := h.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(h.Table), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
		if err != nil {
			panic(err)
		}
		return out.Count
	}
	items := count()
	f.Fuzz(func(t *testing.T, mode uint8, suffix, contentType, signature, authorization, webhookID, body string, base64 bool) {
		headers := map[string]string{
			"Content-Type": contentType, "X-Hub-Signature-256": signature, "Authorization": authorization, "X-Gitlab-Token": signature,
			"webhook-id": webhookID, "webhook-timestamp": "1796205630", "webhook-signature": signature, "X-GitHub-Event": "push",
		}
		ev := apitest.Event(apitest.Call{Method: "POST", Path: "/v1/hooks/" + ids[int(mode)%len(ids)] + suffix, Headers: headers, Body: body, Base64: base64})
		res, err := h.HookAPI.Handle(context.Background(), ev)
		if err != nil || res.StatusCode < 400 || res.StatusCode >= 500 {
			t.Errorf("%d %s: %v", res.StatusCode, res.Body, err)
		}
		if n := count(); n != items {
			t.Errorf("%d items written: %d %s", n-items, res.StatusCode, res.Body)
		}
	})
}
