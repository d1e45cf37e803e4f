package eventbus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/cloud-agent/control-plane/infra/local/eventbus"
)

// logs is a log writer safe for concurrent writes.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}

// fixture is a bus served for one test: PutEvents through the SDK's
// client, the local routes at local.
type fixture struct {
	bus    *eventbus.Bus
	client *eventbridge.Client
	local  string
	logs   *logs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{logs: &logs{}}
	f.bus = eventbus.New("SessionsBus", f.logs)
	put := httptest.NewServer(f.bus)
	t.Cleanup(put.Close)
	local := httptest.NewServer(http.HandlerFunc(f.bus.ServeLocal))
	t.Cleanup(local.Close)
	f.client, f.local = eventbus.Client(put.URL), local.URL
	return f
}

// entry is an entry for the bus with that detail.
func (f *fixture) entry(detail string) types.PutEventsRequestEntry {
	return types.PutEventsRequestEntry{EventBusName: aws.String(f.bus.Name()), Source: aws.String("cloud-agent.control-plane"),
		DetailType: aws.String("Session Started"), Detail: aws.String(detail)}
}

func (f *fixture) put(t *testing.T, entries ...types.PutEventsRequestEntry) *eventbridge.PutEventsOutput {
	t.Helper()
	out, err := f.client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != len(entries) {
		t.Fatalf("%d results for %d entries", len(out.Entries), len(entries))
	}
	return out
}

// putAsync is put for another goroutine than the test's: a failure is
// reported, and the test goes on.
func (f *fixture) putAsync(t *testing.T, entries ...types.PutEventsRequestEntry) {
	out, err := f.client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: entries})
	if err != nil || out.FailedEntryCount != 0 {
		t.Errorf("a put: %v %+v", err, out)
	}
}

// answer is an HTTP answer of the local routes.
type answer struct {
	status  int
	headers http.Header
	body    string
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		t.Fatalf("%d %q: %v", a.status, a.body, err)
	}
	return m
}

func (f *fixture) call(t *testing.T, method, path, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, f.local+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// listed is the ids of GET /_local/events with that query, which must
// answer 200.
func (f *fixture) listed(t *testing.T, query string) []string {
	t.Helper()
	a := f.call(t, "GET", "/_local/events"+query, "")
	if a.status != 200 {
		t.Fatalf("list%s: %d %s", query, a.status, a.body)
	}
	var ids []string
	for _, e := range a.json(t)["events"].([]any) {
		ids = append(ids, e.(map[string]any)["id"].(string))
	}
	return ids
}
