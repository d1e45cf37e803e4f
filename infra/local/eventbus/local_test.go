package eventbus_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// TestFaults: POST /_local/events/faults makes the next entries, across
// calls, fail with InternalFailure (refuseNext) then ThrottlingException
// (throttleNext), counted in FailedEntryCount; then entries are put
// again. Its body is read strictly.
func TestFaults(t *testing.T) {
	f := newFixture(t)
	if a := f.call(t, "POST", "/_local/events/faults", `{"refuseNext": 2, "throttleNext": 2}`); a.status != 200 || a.body != `{"refuseNext":2,"throttleNext":2}` {
		t.Fatalf("faults: %d %s", a.status, a.body)
	}
	codes := func(out []types.PutEventsResultEntry) []string {
		var cs []string
		for _, r := range out {
			cs = append(cs, aws.ToString(r.ErrorCode))
		}
		return cs
	}
	e := f.entry(`{}`)
	out := f.put(t, e, e, e)
	if want := []string{"InternalFailure", "InternalFailure", "ThrottlingException"}; out.FailedEntryCount != 3 || !slices.Equal(codes(out.Entries), want) {
		t.Errorf("the first call: %d %v, want 3 %v", out.FailedEntryCount, codes(out.Entries), want)
	}
	out = f.put(t, e, e)
	if want := []string{"ThrottlingException", ""}; out.FailedEntryCount != 1 || !slices.Equal(codes(out.Entries), want) {
		t.Errorf("the second call: %d %v, want 1 %v", out.FailedEntryCount, codes(out.Entries), want)
	}
	if out = f.put(t, e, e); out.FailedEntryCount != 0 {
		t.Errorf("after the faults: %v", codes(out.Entries))
	}
	if n := len(f.listed(t, "")); n != 3 {
		t.Errorf("%d events put, want 3", n)
	}
	for _, body := range []string{`{"refuseNext": 1, "other": 1}`, `{"refuseNext": "1"}`, `{"refuseNext": 1.5}`,
		`{"RefuseNext": 1}`, `{"refuseNext": 1, "refuseNext": 2}`, `{"throttleNext": -1}`, `[1]`, ``, `{`} {
		a := f.call(t, "POST", "/_local/events/faults", body)
		if a.status != 400 || a.headers.Get("Content-Type") != "application/problem+json" || a.json(t)["code"] != "invalid_request" {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}
	if a := f.call(t, "POST", "/_local/events/faults", `{}`); a.body != `{"refuseNext":0,"throttleNext":0}` {
		t.Errorf("after refusals: %s", a.body)
	}
	if a := f.call(t, "GET", "/_local/events/faults", ""); a.status != 405 || a.headers.Get("Allow") != "POST" || a.json(t)["code"] != "method_not_allowed" {
		t.Errorf("GET faults: %d %v %s", a.status, a.headers, a.body)
	}
}

// TestList: GET /_local/events lists the kept events oldest first, those
// after an event with after; an after unknown or no longer kept is 410
// with the oldest kept id; wait holds the answer until an event comes;
// the bus keeps the last 1,000.
func TestList(t *testing.T) {
	f := newFixture(t)
	if a := f.call(t, "GET", "/_local/events?after=nope", ""); a.status != 410 || a.body != `{"events":[],"oldest":null}` {
		t.Errorf("unknown after on an empty bus: %d %s", a.status, a.body)
	}
	if ids := f.listed(t, ""); len(ids) != 0 {
		t.Errorf("an empty bus lists %v", ids)
	}
	out := f.put(t, f.entry(`{"n":1}`), f.entry(`{"n":2}`), f.entry(`{"n":3}`))
	var put []string
	for _, r := range out.Entries {
		put = append(put, aws.ToString(r.EventId))
	}
	if ids := f.listed(t, ""); !slices.Equal(ids, put) {
		t.Errorf("listed %v, want %v", ids, put)
	}
	if ids := f.listed(t, "?after="+put[0]); !slices.Equal(ids, put[1:]) {
		t.Errorf("after the first: %v", ids)
	}
	if ids := f.listed(t, "?after="+put[2]+"&wait=0"); len(ids) != 0 {
		t.Errorf("after the last: %v", ids)
	}
	// A wait answers when an event comes, well before its end.
	start := time.Now()
	go func() {
		time.Sleep(200 * time.Millisecond)
		f.putAsync(t, f.entry(`{"n":4}`))
	}()
	if ids := f.listed(t, "?wait=20&after="+put[2]); len(ids) != 1 || time.Since(start) > 2*time.Second || time.Since(start) < 200*time.Millisecond {
		t.Errorf("a wait: %v after %v", ids, time.Since(start))
	}
	last := f.listed(t, "")[3]
	start = time.Now()
	if ids := f.listed(t, "?wait=1&after="+last); len(ids) != 0 || time.Since(start) < time.Second {
		t.Errorf("a wait with no event: %v after %v", ids, time.Since(start))
	}
	for _, q := range []string{"?wait=21", "?wait=-1", "?wait=x", "?wait=1.5", "?wait=+1", "?wait=", "?after=", "?wait=1&wait=2"} {
		if a := f.call(t, "GET", "/_local/events"+q, ""); a.status != 400 || a.headers.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s", q, a.status, a.body)
		}
	}
	if a := f.call(t, "POST", "/_local/events", ""); a.status != 405 || a.headers.Get("Allow") != "GET" {
		t.Errorf("POST: %d %v", a.status, a.headers)
	}
	if a := f.call(t, "GET", "/_local/events/other", ""); a.status != 404 || a.json(t)["code"] != "not_found" {
		t.Errorf("another path: %d %s", a.status, a.body)
	}
	// 1,000 more events: the first four are dropped.
	for range 100 {
		f.put(t, slices.Repeat([]types.PutEventsRequestEntry{f.entry(`{}`)}, 10)...)
	}
	ids := f.listed(t, "")
	if len(ids) != 1000 || slices.Contains(ids, last) {
		t.Fatalf("%d kept", len(ids))
	}
	a := f.call(t, "GET", "/_local/events?after="+put[0], "")
	if a.status != 410 || a.body != fmt.Sprintf(`{"events":[],"oldest":%q}`, ids[0]) {
		t.Errorf("after a dropped event: %d %s", a.status, a.body)
	}
	if got := f.listed(t, "?after="+ids[998]); !slices.Equal(got, ids[999:]) {
		t.Errorf("after the last but one: %v", got)
	}
}

// TestWaitEnds: a wait ends with its context; waiters and writers at
// once see every event once, in order.
func TestWaitEnds(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if events, _, ok := f.bus.Events(ctx, "", 20*time.Second); len(events) != 0 || !ok || time.Since(start) > 5*time.Second {
		t.Errorf("a cancelled wait: %v %v after %v", events, ok, time.Since(start))
	}
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				f.putAsync(t, f.entry(`{}`))
			}
		})
	}
	var seen []string
	for after := ""; len(seen) < writers*each; {
		events, _, ok := f.bus.Events(context.Background(), after, 5*time.Second)
		if !ok || len(events) == 0 {
			t.Fatalf("after %d events: %v %d", len(seen), ok, len(events))
		}
		for _, e := range events {
			seen = append(seen, e.ID)
		}
		after = seen[len(seen)-1]
	}
	wg.Wait()
	if all := f.listed(t, ""); !slices.Equal(all, seen) {
		t.Errorf("the waiters saw %d events, %d listed", len(seen), len(all))
	}
}

// TestLogWithoutToken: each event put is one log line with its detail
// type and id, and its detail without launch.token; the token never
// reaches the log, though the listed event keeps it.
func TestLogWithoutToken(t *testing.T) {
	f := newFixture(t)
	const token = "sst_c2VjcmV0LXRva2VuLW5ldmVyLWxvZ2dlZC1hbnl3aGVyZQ"
	started := f.entry(`{"sessionId":"s1","launch":{"url":"http://127.0.0.1:3000/v1/runtime/sessions/s1","token":"` + token + `"}}`)
	escaped := f.entry(`{"sessionId":"s2","launch":{"tok\u0065n":"` + token + `x"}}`)
	other := f.entry(`{"sessionId":"s3","launch":"plain","token":"kept"}`)
	out := f.put(t, started, escaped, other)
	lines := f.logs.lines()
	if len(lines) != 3 {
		t.Fatalf("%d log lines: %v", len(lines), lines)
	}
	for i, line := range lines {
		if strings.Contains(line, token) {
			t.Errorf("the token is logged: %s", line)
		}
		for _, want := range []string{`"detailType":"Session Started"`, `"id":"` + aws.ToString(out.Entries[i].EventId) + `"`, `"sessionId":"s` + fmt.Sprint(i+1) + `"`} {
			if !strings.Contains(line, want) {
				t.Errorf("line %d lacks %s: %s", i, want, line)
			}
		}
	}
	if !strings.Contains(lines[0], `"launch":{"url":"http://127.0.0.1:3000/v1/runtime/sessions/s1"}`) {
		t.Errorf("the launch url is not logged: %s", lines[0])
	}
	if !strings.Contains(lines[2], `"launch":"plain"`) || !strings.Contains(lines[2], `"token":"kept"`) {
		t.Errorf("a detail without a launch object is not logged as it is: %s", lines[2])
	}
	if a := f.call(t, "GET", "/_local/events", ""); !strings.Contains(a.body, token) {
		t.Errorf("the listed event lost its token: %s", a.body)
	}
}
