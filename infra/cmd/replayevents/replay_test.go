package main

import (
	"context"
	"encoding/json/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/secrets"
)

// TestReplaysWhatThePollerGaveUp: a batch the local mapping gave up on
// (its failure file, as the poller writes it) is read again from the
// stream and handed to the function built here: the new sessions'
// Session Started, with the token SessionTokenKey derives, and the
// outcome's Session Ended are on the bus, in order; the prompt and the
// claim are skipped; the line counts them and holds no token.
func TestReplaysWhatThePollerGaveUp(t *testing.T) {
	e := newEnv(t)
	e.sessions(t)
	e.giveUp(t)
	stdout, stderr, err := run1(t, e.options())
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, ": 5 records read, 3 events put, 2 skipped, 0 failed\n") || !strings.HasPrefix(stdout, "shard ") {
		t.Errorf("stdout %q", stdout)
	}
	got, _, _ := e.bus.Events(context.Background(), "", 0)
	var kinds []string
	for _, ev := range got {
		var d struct {
			SessionID string `json:"sessionId"`
			Launch    struct {
				Token string `json:"token"`
			} `json:"launch"`
		}
		if err := json.Unmarshal(ev.Detail, &d, json.RejectUnknownMembers(false)); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.DetailType+" "+d.SessionID)
		if ev.DetailType != "Session Started" {
			continue
		}
		want, err := secrets.NewSessionTokens(kmsClient(e), localTokenKey).Token(context.Background(), d.SessionID)
		if err != nil || d.Launch.Token != want || !outcome.WellFormedToken(want) {
			t.Errorf("%s: token %q, want %q (%v)", d.SessionID, d.Launch.Token, want, err)
		}
		if strings.Contains(stdout+stderr, want) {
			t.Error("the output holds a token")
		}
	}
	if want := []string{"Session Started workspace_a", "Session Started workspace_b", "Session Ended workspace_b"}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}

// TestReplaysOneRange: -shard, -from and -to name a range of the table's
// stream: only its records are handed over.
func TestReplaysOneRange(t *testing.T) {
	e := newEnv(t)
	e.sessions(t)
	seqs := e.streamSeqs(t)
	o := e.options()
	o.Shard, o.From, o.To = e.shard(t), seqs[2], seqs[3]
	stdout, stderr, err := run1(t, o)
	if err != nil || !strings.Contains(stdout, "records "+seqs[2]+" to "+seqs[3]+": 2 records read, 1 events put, 1 skipped, 0 failed") {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	if got, _, _ := e.bus.Events(context.Background(), "", 0); len(got) != 1 || !strings.Contains(string(got[0].Detail), "workspace_b") {
		t.Errorf("events %+v", got)
	}
}

// TestRefusedEventsFail: events the bus refuses past every try are
// counted as failed, and the command fails.
func TestRefusedEventsFail(t *testing.T) {
	e := newEnv(t)
	e.sessions(t)
	e.giveUp(t)
	e.bus.SetFaults(eventbus.Faults{RefuseNext: 100})
	stdout, _, err := run1(t, e.options())
	if err == nil || !strings.Contains(stdout, "0 events put, 2 skipped, 3 failed") {
		t.Errorf("%v\n%s", err, stdout)
	}
}

// TestRangeNotInStream: a range the stream has trimmed (past its 24
// hours), or a shard it does not have, is said plainly, nothing is put,
// and the command fails.
func TestRangeNotInStream(t *testing.T) {
	e := newEnv(t)
	e.sessions(t)
	seqs := e.streamSeqs(t)
	proxy := faultproxy.New(e.url)
	t.Cleanup(proxy.Close)
	proxy.Inject("GetShardIterator", 1, faultproxy.Status(400, "com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException", "trimmed"))
	cases := []struct {
		name, endpoint, shard, want string
	}{
		{"trimmed", proxy.URL(), e.shard(t), "the stream has trimmed it (it keeps records 24 hours)"},
		{"unknown shard", e.url, "shardId-00000000000000000000-nothere", "or its shard is not there"},
	}
	for _, c := range cases {
		o := e.options()
		o.Endpoint, o.Shard, o.From, o.To = c.endpoint, c.shard, seqs[0], seqs[4]
		stdout, stderr, err := run1(t, o)
		if err == nil || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, ErrNotInStream.Error()) {
			t.Errorf("%s: %v\n%s\n%s", c.name, err, stdout, stderr)
		}
	}
	if got, _, _ := e.bus.Events(context.Background(), "", 0); len(got) != 0 {
		t.Errorf("events put: %+v", got)
	}
}

// TestReadFailures: the failure file's lines, the SQS answer of
// receive-message and the bodies its text output prints all name the
// same ranges; a value that is no failure record is refused.
func TestReadFailures(t *testing.T) {
	rec := `{"requestContext":{"condition":"RetryAttemptsExhausted"},"version":"1.0","DDBStreamBatchInfo":{"shardId":"s1","startSequenceNumber":"100","endSequenceNumber":"200","streamArn":"arn:s"}}`
	body, _ := json.Marshal(rec)
	want := []Range{{StreamARN: "arn:s", Shard: "s1", From: "100", To: "200"}}
	cases := []struct{ name, in string }{
		{"lines", rec + "\n"},
		{"receive-message", `{"Messages":[{"MessageId":"m","ReceiptHandle":"h","Body":` + string(body) + `}]}`},
		{"bodies as text", rec + "\t" + rec},
	}
	for _, c := range cases {
		got, err := readFailures(strings.NewReader(c.in))
		if err != nil || !slices.Equal(got[:1], want) {
			t.Errorf("%s: %v %v", c.name, got, err)
		}
	}
	for _, bad := range []string{`{"DDBStreamBatchInfo":{"shardId":"s1"}}`, `[1]`, `{"Messages":[{"Body":"{}"}]}`, `{`} {
		if _, err := readFailures(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: read", bad)
		}
	}
}

// TestFlags: flags that do not go together are refused; locally the
// stand-ins' addresses are required; in AWS the function is.
func TestFlags(t *testing.T) {
	local := []string{"-kms-endpoint", "http://k", "-events-endpoint", "http://e"}
	cases := []struct {
		args []string
		ok   bool
	}{
		{local, true},
		{nil, false},
		{append([]string{"-shard", "s"}, local...), false},
		{append([]string{"-shard", "s", "-from", "1", "-to", "2", "-failures", "f"}, local...), false},
		{[]string{"-region", "eu-west-1", "-function", "f"}, true},
		{[]string{"-region", "eu-west-1"}, false},
		{[]string{"-function", "f"}, false},
		{[]string{"-region", "eu-west-1", "-function", "f", "-endpoint", "http://x"}, false},
		{[]string{"-region", "eu-west-1", "-function", "f", "-bus", "b"}, false},
	}
	for _, c := range cases {
		if _, err := parseFlags(c.args, os.Stderr); (err == nil) != c.ok {
			t.Errorf("%v: %v, want ok %v", c.args, err, c.ok)
		}
	}
}
