package sessionevents_test

import (
	"bytes"
	"context"
	"encoding/json/v2"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/bus"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/sessionevents"
	"github.com/cloud-agent/control-plane/shared/store"
)

var created = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

// stack is the function's service on the KMS and EventBridge stand-ins.
type stack struct {
	svc    *sessionevents.Service
	bus    *eventbus.Bus
	tokens *secrets.SessionTokens
	log    *bytes.Buffer
}

func newStack(t testing.TB, kmsURL string) *stack {
	t.Helper()
	b := eventbus.New("SessionsBus", &bytes.Buffer{})
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	if kmsURL == "" {
		kmsURL = kms.NewTestServer(t, nil).URL
	}
	s := &stack{bus: b, tokens: secrets.NewSessionTokens(kms.Client(kmsURL), "alias/SessionTokenKey"), log: &bytes.Buffer{}}
	s.svc = &sessionevents.Service{Tokens: s.tokens, Bus: bus.New(eventbus.Client(srv.URL), "SessionsBus"), APIURL: "https://api.example",
		Log: slog.New(slog.NewJSONHandler(s.log, nil)), Metrics: invocation.NewMetrics("SessionEventsFunction", "$LATEST")}
	return s
}

func newRecord(id string) *session.Record {
	a, _ := allocation.ByName(allocation.ContainersStandard4)
	return &session.Record{SessionID: id, SchemaVersion: 2, UserID: "u1", CreatedAt: created, CreatedOnPlatform: "cli",
		Sandbox: session.Sandbox{ID: allocation.SandboxID(id), Kind: allocation.KindIsolated, Provider: a.Provider(), ProviderStored: true, Allocation: a}}
}

// image is an item as the stream hands it to Lambda.
func image(t testing.TB, item store.Item) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	if item == nil {
		return nil
	}
	b, err := attributevalue.MarshalMapJSON(item)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func record(t testing.TB, seq, name string, old, next store.Item) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventName: name, Change: events.DynamoDBStreamRecord{
		SequenceNumber: seq, OldImage: image(t, old), NewImage: image(t, next)}}
}

// batch is a stream batch: a new session (announced), a legacy one and a
// session's prompt (skipped), a claim (skipped), an outcome (announced).
func batch(t *testing.T) events.DynamoDBEvent {
	fresh, legacy, claimed, ended := newRecord("workspace_a"), newRecord("workspace_l"), newRecord("workspace_b"), newRecord("workspace_b")
	legacy.Sandbox.Allocation, _ = allocation.ByName(allocation.CloudflareShared)
	legacy.Sandbox.Provider = legacy.Sandbox.Allocation.Provider()
	claimed.Claim = &outcome.Claim{Runner: "r1", ClaimedAt: created, HeartbeatAt: created}
	ended.Claim = claimed.Claim
	ended.Outcome = &outcome.Outcome{Status: outcome.Completed, EndedAt: created, ReportedAt: created, Revision: 1}
	prompt := store.SessionKey("workspace_a")
	prompt["SK"] = store.S("PROMPT")
	return events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		record(t, "100", "INSERT", nil, store.EncodeSession(fresh)),
		record(t, "200", "INSERT", nil, store.EncodeSession(legacy)),
		record(t, "300", "INSERT", nil, prompt),
		record(t, "400", "MODIFY", store.EncodeSession(newRecord("workspace_b")), store.EncodeSession(claimed)),
		record(t, "500", "MODIFY", store.EncodeSession(claimed), store.EncodeSession(ended)),
	}}
}

// TestAnnounce: a batch's new session is announced as Session Started
// with its token (the one the key derives) and its outcome as Session
// Ended, in the order of the writes; the rest is skipped; nothing fails,
// and the line counts them.
func TestAnnounce(t *testing.T) {
	s := newStack(t, "")
	resp, err := s.svc.Handle(context.Background(), batch(t))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	got, _, _ := s.bus.Events(context.Background(), "", 0)
	if len(got) != 2 || got[0].DetailType != "Session Started" || got[1].DetailType != "Session Ended" || got[0].Source != "cloud-agent.control-plane" {
		t.Fatalf("events %+v", got)
	}
	token, err := s.tokens.Token(context.Background(), "workspace_a")
	if err != nil || !outcome.WellFormedToken(token) {
		t.Fatal(token, err)
	}
	var started struct {
		SessionID string `json:"sessionId"`
		Launch    struct {
			URL   string `json:"url"`
			Token string `json:"token"`
		} `json:"launch"`
	}
	if err := json.Unmarshal(got[0].Detail, &started, json.RejectUnknownMembers(false)); err != nil ||
		started.SessionID != "workspace_a" || started.Launch.Token != token || started.Launch.URL != "https://api.example/v1/runtime/sessions/workspace_a" {
		t.Errorf("Session Started %s", got[0].Detail)
	}
	if d := string(got[1].Detail); !strings.Contains(d, `"sequence":2`) || !strings.Contains(d, `"final":true`) {
		t.Errorf("Session Ended %s", d)
	}
	line := s.log.String()
	for _, want := range []string{`"put":2`, `"skipped":3`, `"EventsPut":2`, `"EventsSkipped":3`, `"EventsFailed":0`} {
		if !strings.Contains(line, want) {
			t.Errorf("the line lacks %s: %s", want, line)
		}
	}
	if strings.Contains(line, token) {
		t.Error("the line holds a token")
	}
}

// TestRefusedEntries: entries PutEvents refuses (failed or throttled) are
// put again, and only they: every event put once. Entries refused past
// every try are the batch's item failures, by sequence number, so that
// Lambda hands them again; nothing is lost.
func TestRefusedEntries(t *testing.T) {
	s := newStack(t, "")
	s.bus.SetFaults(eventbus.Faults{RefuseNext: 1, ThrottleNext: 1})
	resp, _ := s.svc.Handle(context.Background(), batch(t))
	got, _, _ := s.bus.Events(context.Background(), "", 0)
	if len(resp.BatchItemFailures) != 0 || len(got) != 2 {
		t.Fatalf("%+v, %d events", resp, len(got))
	}
	s = newStack(t, "")
	s.bus.SetFaults(eventbus.Faults{ThrottleNext: 2 * bus.Tries})
	resp, _ = s.svc.Handle(context.Background(), batch(t))
	got, _, _ = s.bus.Events(context.Background(), "", 0)
	if f := resp.BatchItemFailures; len(f) != 2 || f[0].ItemIdentifier != "100" || f[1].ItemIdentifier != "500" || len(got) != 0 {
		t.Errorf("%+v, %+v", resp, got)
	}
	if !strings.Contains(s.log.String(), `"EventsFailed":2`) || !strings.Contains(s.log.String(), `"failed":["workspace_a","workspace_b"]`) ||
		!strings.Contains(s.log.String(), `["Function","Version"]`) {
		t.Errorf("line %s", s.log.String())
	}
}

// TestKMSUnreachable: a new session whose token cannot be derived is an
// item failure, and so is every change after it, none put: Lambda hands
// them all again, and a later event never goes on ahead of it.
func TestKMSUnreachable(t *testing.T) {
	dead := httptest.NewServer(nil)
	dead.Close()
	s := newStack(t, dead.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, _ := s.svc.Handle(ctx, batch(t))
	got, _, _ := s.bus.Events(context.Background(), "", 0)
	if f := resp.BatchItemFailures; len(f) != 2 || f[0].ItemIdentifier != "100" || f[1].ItemIdentifier != "500" || len(got) != 0 {
		t.Errorf("%+v, %d events", resp, len(got))
	}
}

// TestUndecodable: a session's record that does not decode (a writer this
// version does not know) is an item failure, never skipped and lost; the
// changes before it are put, those after it handed again. The line names
// the session, never the item.
func TestUndecodable(t *testing.T) {
	s := newStack(t, "")
	bad := store.EncodeSession(newRecord("workspace_new"))
	bad["metadata"].(*types.AttributeValueMemberM).Value["workspace"].(*types.AttributeValueMemberM).Value["sandboxAllocation"] = store.S("a-later-allocation")
	ev := batch(t)
	ev.Records = append(ev.Records[:1], append([]events.DynamoDBEventRecord{record(t, "150", "INSERT", nil, bad)}, ev.Records[1:]...)...)
	resp, _ := s.svc.Handle(context.Background(), ev)
	got, _, _ := s.bus.Events(context.Background(), "", 0)
	if f := resp.BatchItemFailures; len(f) != 2 || f[0].ItemIdentifier != "150" || f[1].ItemIdentifier != "500" || len(got) != 1 || got[0].DetailType != "Session Started" {
		t.Errorf("%+v, %+v", resp, got)
	}
	if line := s.log.String(); !strings.Contains(line, `"failed":["workspace_new","workspace_b"]`) || strings.Contains(line, "a-later-allocation") {
		t.Errorf("line %s", line)
	}
}
