package eventbus_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
)

// TestPutEvents: entries put through the SDK get a UUID each, and are
// listed as EventBridge hands events to a target: the entry's time in
// whole seconds (or the time of the call), its resources (or []), its
// detail as an object.
func TestPutEvents(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 3, 1, 12, 30, 45, 600_000_000, time.UTC)
	first := f.entry(`{"sessionId": "s1", "sequence": 1}`)
	first.Time, first.Resources = &at, []string{"arn:aws:events:us-east-1:000000000000:thing/1"}
	second := f.entry(`{"sessionId":"s2"}`)
	second.EventBusName, second.DetailType = aws.String(f.bus.ARN()), aws.String("Session Ended")
	before := time.Now().UTC().Truncate(time.Second)
	out := f.put(t, first, second)
	after := time.Now().UTC()
	if out.FailedEntryCount != 0 {
		t.Fatalf("FailedEntryCount %d: %+v", out.FailedEntryCount, out.Entries)
	}
	for _, r := range out.Entries {
		if _, err := uuid.Parse(aws.ToString(r.EventId)); err != nil || r.ErrorCode != nil {
			t.Errorf("a result: %+v", r)
		}
	}
	events := f.call(t, "GET", "/_local/events", "").json(t)["events"].([]any)
	if len(events) != 2 {
		t.Fatalf("%d events listed", len(events))
	}
	e0, e1 := events[0].(map[string]any), events[1].(map[string]any)
	want0 := map[string]any{"version": "0", "id": aws.ToString(out.Entries[0].EventId), "detail-type": "Session Started",
		"source": "cloud-agent.control-plane", "account": "000000000000", "time": "2026-03-01T12:30:45Z", "region": "us-east-1",
		"resources": []any{"arn:aws:events:us-east-1:000000000000:thing/1"}, "detail": map[string]any{"sessionId": "s1", "sequence": float64(1)}}
	for k, v := range want0 {
		if !equalJSON(e0[k], v) {
			t.Errorf("%s: %v, want %v", k, e0[k], v)
		}
	}
	if len(e0) != len(want0) {
		t.Errorf("members %v", e0)
	}
	tm, err := time.Parse(time.RFC3339, e1["time"].(string))
	if err != nil || tm.Before(before) || tm.After(after) || !strings.HasSuffix(e1["time"].(string), "Z") {
		t.Errorf("the second's time %v, want the call's, between %v and %v", e1["time"], before, after)
	}
	if r, ok := e1["resources"].([]any); !ok || len(r) != 0 || e1["id"] != aws.ToString(out.Entries[1].EventId) || e1["detail-type"] != "Session Ended" {
		t.Errorf("the second event: %v", e1)
	}
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equalJSON)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equalJSON(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// apiError is the code of a call's error, which must be one.
func apiError(t *testing.T, err error) string {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("not an API error: %v", err)
	}
	return ae.ErrorCode()
}

// TestEntriesLimit: 10 entries are put, 11 are a ValidationException
// and put nothing.
func TestEntriesLimit(t *testing.T) {
	f := newFixture(t)
	entries := slices.Repeat([]types.PutEventsRequestEntry{f.entry(`{}`)}, 11)
	_, err := f.client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: entries})
	if code := apiError(t, err); code != "ValidationException" {
		t.Errorf("11 entries: %s", code)
	}
	if ids := f.listed(t, ""); len(ids) != 0 {
		t.Errorf("11 entries put %d events", len(ids))
	}
	if out := f.put(t, entries[:10]...); out.FailedEntryCount != 0 || len(f.listed(t, "")) != 10 {
		t.Errorf("10 entries: %d failed", out.FailedEntryCount)
	}
}

// TestSizeLimit: a call's entries of 256 KB (262,144 bytes) in all, as
// EventBridge counts them (Time 14 bytes, Source, DetailType, Detail and
// each resource in UTF-8 bytes), are put; one byte more is a
// ValidationException.
func TestSizeLimit(t *testing.T) {
	f := newFixture(t)
	at := time.Now()
	withTime := f.entry("")
	withTime.Time, withTime.Resources = &at, []string{"arn:1", "ré"} // 5 + 3 bytes
	plain := f.entry("")
	plain.Source = aws.String("sourcé") // 7 bytes
	fixed := 14 + 8 + len("cloud-agent.control-plane") + 7 + 2*len("Session Started")
	// Details of n bytes in all, each an object holding a multi-byte
	// character, so that counting characters is not counting bytes.
	details := func(n int) (string, string) {
		half := n / 2
		one := `{"é":"` + strings.Repeat("x", half-len(`{"é":""}`)) + `"}`
		two := `{"é":"` + strings.Repeat("y", n-half-len(`{"é":""}`)) + `"}`
		return one, two
	}
	for _, tc := range []struct {
		total int
		ok    bool
	}{{262_144, true}, {262_145, false}} {
		withTime.Detail, plain.Detail = new(string), new(string)
		*withTime.Detail, *plain.Detail = details(tc.total - fixed)
		out, err := f.client.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{withTime, plain}})
		switch {
		case tc.ok && (err != nil || out.FailedEntryCount != 0):
			t.Errorf("%d bytes: %v %+v", tc.total, err, out)
		case !tc.ok && err == nil:
			t.Errorf("%d bytes accepted", tc.total)
		case !tc.ok && apiError(t, err) != "ValidationException":
			t.Errorf("%d bytes: %v", tc.total, err)
		}
	}
	if n := len(f.listed(t, "")); n != 2 {
		t.Errorf("%d events put, want the 2 of the call at the limit", n)
	}
}

// TestEntryErrors: an entry without Source, DetailType or Detail, with a
// detail that is not a JSON object, or for another bus fails on its own,
// and the call's other entries are put.
func TestEntryErrors(t *testing.T) {
	f := newFixture(t)
	good := f.entry(`{"ok":true}`)
	with := func(change func(*types.PutEventsRequestEntry)) types.PutEventsRequestEntry {
		e := f.entry(`{"a":1}`)
		change(&e)
		return e
	}
	cases := []struct {
		entry types.PutEventsRequestEntry
		code  string
	}{
		{good, ""},
		{with(func(e *types.PutEventsRequestEntry) { e.Source = nil }), "InvalidArgument"},
		{with(func(e *types.PutEventsRequestEntry) { e.DetailType = aws.String("") }), "InvalidArgument"},
		{with(func(e *types.PutEventsRequestEntry) { e.Detail = nil }), "InvalidArgument"},
		{with(func(e *types.PutEventsRequestEntry) { e.Detail = aws.String(`[1]`) }), "MalformedDetail"},
		{with(func(e *types.PutEventsRequestEntry) { e.Detail = aws.String(`"text"`) }), "MalformedDetail"},
		{with(func(e *types.PutEventsRequestEntry) { e.Detail = aws.String(`{"a":`) }), "MalformedDetail"},
		{with(func(e *types.PutEventsRequestEntry) { e.EventBusName = aws.String("OtherBus") }), "ResourceNotFoundException"},
		{with(func(e *types.PutEventsRequestEntry) { e.EventBusName = nil }), "ResourceNotFoundException"},
		{with(func(e *types.PutEventsRequestEntry) {
			e.EventBusName = aws.String(strings.Replace(f.bus.ARN(), "us-east-1", "eu-west-1", 1))
		}), "ResourceNotFoundException"},
	}
	var entries []types.PutEventsRequestEntry
	for _, c := range cases {
		entries = append(entries, c.entry)
	}
	out := f.put(t, entries...)
	if out.FailedEntryCount != int32(len(cases)-1) {
		t.Errorf("FailedEntryCount %d, want %d", out.FailedEntryCount, len(cases)-1)
	}
	for i, c := range cases {
		r := out.Entries[i]
		if aws.ToString(r.ErrorCode) != c.code || (c.code == "") == (r.EventId == nil) || (c.code != "") == (aws.ToString(r.ErrorMessage) == "") {
			t.Errorf("entry %d: %s %q %v, want %q", i, aws.ToString(r.ErrorCode), aws.ToString(r.ErrorMessage), r.EventId, c.code)
		}
	}
	if ids := f.listed(t, ""); !slices.Equal(ids, []string{aws.ToString(out.Entries[0].EventId)}) {
		t.Errorf("listed %v", ids)
	}
}
