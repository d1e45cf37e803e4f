package local

import (
	"context"
	"encoding/json/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
)

// TestAnnouncedThroughAKill: the session events function killed in the
// middle of a batch (its entries refused by the bus, so that it is still
// at work), every session is announced at least once all the same, none
// lost: the mapping hands the batch again, and the emulator starts the
// function anew. Nothing goes to the failure file.
func TestAnnouncedThroughAKill(t *testing.T) {
	t.Parallel()
	s := startStack(t, Config{})
	token := gateway.DevToken(map[string]any{"sub": "u1"})
	s.Bus.SetFaults(eventbus.Faults{ThrottleNext: 1 << 20})
	want := map[string]bool{}
	for range 20 {
		status, body := call(t, "POST", s.APIURL+"/v1/sessions", token, `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`)
		if status != 201 {
			t.Fatalf("start: %d %v", status, body)
		}
		want[body["sessionId"].(string)] = true
	}
	killed := false
	for deadline := time.Now().Add(20 * time.Second); !killed && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, pid := functionProcesses(t, s, "SessionEventsFunction"); pid != "" {
			n, _ := strconv.Atoi(pid)
			time.Sleep(300 * time.Millisecond) // within the batch's puts, refused and put again
			killed = syscall.Kill(n, syscall.SIGKILL) == nil
		}
	}
	if !killed {
		t.Fatal("the session events function never ran")
	}
	s.Bus.SetFaults(eventbus.Faults{})
	announced := map[string]bool{}
	for deadline := time.Now().Add(60 * time.Second); len(announced) < len(want) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		evs, _, _ := s.Bus.Events(context.Background(), "", 0)
		for _, ev := range evs {
			var d struct {
				SessionID string `json:"sessionId"`
			}
			if ev.DetailType == "Session Started" && json.Unmarshal(ev.Detail, &d, json.RejectUnknownMembers(false)) == nil && want[d.SessionID] {
				announced[d.SessionID] = true
			}
		}
	}
	if len(announced) != len(want) {
		t.Errorf("%d of %d sessions announced", len(announced), len(want))
	}
	if b, err := os.ReadFile(s.StreamFiles()[1]); err == nil && len(b) > 0 {
		t.Errorf("the failure file: %s", b)
	}
}

// TestAnnouncedFromAnotherEndpoint: with AWS_ENDPOINT_URL_DYNAMODB's
// endpoint (moto here, which serves DynamoDB Streams too), the stack gives
// the table its stream and polls it: a session started there is
// announced.
func TestAnnouncedFromAnotherEndpoint(t *testing.T) {
	t.Parallel()
	s := startStack(t, Config{DynamoURL: motoserver.URL(t)})
	status, body := call(t, "POST", s.APIURL+"/v1/sessions", gateway.DevToken(map[string]any{"sub": "u1"}),
		`{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"m"}}`)
	if status != 201 {
		t.Fatalf("start: %d %v", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for after := ""; ctx.Err() == nil; {
		evs, _, _ := s.Bus.Events(ctx, after, 5*time.Second)
		for _, ev := range evs {
			after = ev.ID
			var d struct {
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal(ev.Detail, &d, json.RejectUnknownMembers(false)) == nil && d.SessionID == body["sessionId"] {
				return
			}
		}
	}
	t.Errorf("no Session Started for %v from the other endpoint's stream", body["sessionId"])
}
