package streampoll

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// failOnce answers batchItemFailures naming the records of the keys
// (partition keys), the first time each comes.
func failOnce(keys ...string) func(int, []events.DynamoDBEventRecord) ([]byte, error) {
	left := map[string]bool{}
	for _, k := range keys {
		left[k] = true
	}
	return func(_ int, recs []events.DynamoDBEventRecord) ([]byte, error) {
		var ids []string
		for _, r := range recs {
			if pk := r.Change.Keys["PK"].String(); left[pk] {
				delete(left, pk)
				ids = append(ids, fmt.Sprintf(`{"itemIdentifier":%q}`, r.Change.SequenceNumber))
			}
		}
		return fmt.Appendf(nil, `{"batchItemFailures":[%s]}`, strings.Join(ids, ",")), nil
	}
}

// TestRetriesFromLowestItemFailure: the records before the lowest
// failure are settled; the batch is retried from it.
func TestRetriesFromLowestItemFailure(t *testing.T) {
	e := newEnv(t)
	for i := range 6 {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	all := e.streamSeqs(t)
	f := &fn{answer: failOnce("S#4", "S#2")}
	stop := start(t, e.poller(f, base))
	waitFor(t, "the checkpoint at the last record", func() bool { return e.checkpointOf(t).SequenceNumber == all[5] })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	calls := f.invocations()
	if len(calls) != 2 {
		t.Fatalf("%d invocations, want 2", len(calls))
	}
	if got := seqsOf(calls[1]); !slices.Equal(got, all[2:]) {
		t.Errorf("retried %v, want %v", got, all[2:])
	}
	if len(e.failures(t)) != 0 {
		t.Errorf("failures %v", e.failures(t))
	}
}

func seqsOf(recs []events.DynamoDBEventRecord) []string {
	var s []string
	for _, r := range recs {
		s = append(s, r.Change.SequenceNumber)
	}
	return s
}

// poison fails every invocation that holds the record of PK pk.
func poison(pk string) func(int, []events.DynamoDBEventRecord) ([]byte, error) {
	return func(_ int, recs []events.DynamoDBEventRecord) ([]byte, error) {
		for _, r := range recs {
			if r.Change.Keys["PK"].String() == pk {
				return nil, errors.New("poisoned")
			}
		}
		return nil, nil
	}
}

// TestBisectsThenGivesUp: a function error splits the batch until the
// failing record is alone; it is retried MaxRetries times, then the
// failure file names its shard and sequence number; every other record
// is delivered.
func TestBisectsThenGivesUp(t *testing.T) {
	e := newEnv(t)
	for i := range 8 {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	all := e.streamSeqs(t)
	f := &fn{answer: poison("S#4")}
	m := base
	m.MaxRetries = 2
	stop := start(t, e.poller(f, m))
	waitFor(t, "the checkpoint at the last record", func() bool { return e.checkpointOf(t).SequenceNumber == all[7] })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.seqs(), slices.Delete(slices.Clone(all), 4, 5); !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	alone := 0
	for _, c := range f.invocations() {
		if len(c) == 1 && c[0].Change.SequenceNumber == all[4] {
			alone++
		}
	}
	if alone != 3 {
		t.Errorf("the poisoned record was invoked alone %d times, want 1 + 2 retries", alone)
	}
	fails := e.failures(t)
	if len(fails) != 1 {
		t.Fatalf("failures %v", fails)
	}
	checkFailure(t, fails[0], e, all[4], all[4], 1, "RetryAttemptsExhausted")
	if rc := fails[0]["requestContext"].(map[string]any); rc["approximateInvokeCount"] != 3.0 {
		t.Errorf("requestContext %v", rc)
	}
	if resp := fails[0]["responseContext"].(map[string]any); resp["functionError"] != "Unhandled" {
		t.Errorf("responseContext %v", resp)
	}
}

// checkFailure checks a failure record's batch.
func checkFailure(t *testing.T, f map[string]any, e *env, start, end string, size int, condition string) {
	t.Helper()
	info := f["DDBStreamBatchInfo"].(map[string]any)
	if info["shardId"] != e.shard(t) || info["startSequenceNumber"] != start || info["endSequenceNumber"] != end ||
		info["batchSize"] != float64(size) || info["streamArn"] != e.arn || info["approximateArrivalOfFirstRecord"] == "" {
		t.Errorf("DDBStreamBatchInfo %v, want %s to %s, %d records", info, start, end, size)
	}
	if rc := f["requestContext"].(map[string]any); rc["condition"] != condition || rc["functionArn"] == "" || f["version"] != "1.0" {
		t.Errorf("failure %v, want condition %s", f, condition)
	}
	if _, err := time.Parse(time.RFC3339, f["timestamp"].(string)); err != nil {
		t.Error(err)
	}
}

// TestWithoutBisectTheWholeBatchFails: without bisection, the whole
// batch is retried and then named in the failure file.
func TestWithoutBisectTheWholeBatchFails(t *testing.T) {
	e := newEnv(t)
	for i := range 4 {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	all := e.streamSeqs(t)
	f := &fn{answer: poison("S#1")}
	m := base
	m.MaxRetries, m.Bisect = 1, false
	stop := start(t, e.poller(f, m))
	waitFor(t, "the checkpoint at the last record", func() bool { return e.checkpointOf(t).SequenceNumber == all[3] })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.invocations()); n != 2 || len(f.seqs()) != 0 {
		t.Errorf("%d invocations, %v taken; want 2, none", n, f.seqs())
	}
	fails := e.failures(t)
	if len(fails) != 1 {
		t.Fatalf("failures %v", fails)
	}
	checkFailure(t, fails[0], e, all[0], all[3], 4, "RetryAttemptsExhausted")
}

// TestMaxRecordAge: records older than MaxRecordAge go to the failure
// file without an invocation; younger ones are delivered.
func TestMaxRecordAge(t *testing.T) {
	e := newEnv(t)
	e.put(t, "S#old1", "METADATA")
	e.put(t, "S#old2", "METADATA")
	time.Sleep(3100 * time.Millisecond)
	e.put(t, "S#new", "METADATA")
	all := e.streamSeqs(t)
	m := base
	m.MaxRecordAge = 2 * time.Second
	f := &fn{}
	stop := start(t, e.poller(f, m))
	waitFor(t, "the checkpoint at the last record", func() bool { return e.checkpointOf(t).SequenceNumber == all[2] })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.seqs(); !slices.Equal(got, all[2:]) {
		t.Errorf("delivered %v, want %v", got, all[2:])
	}
	fails := e.failures(t)
	if len(fails) != 1 {
		t.Fatalf("failures %v", fails)
	}
	checkFailure(t, fails[0], e, all[0], all[1], 2, "RecordAgeExceeded")
	if _, ok := fails[0]["responseContext"]; ok {
		t.Errorf("a responseContext without an invocation: %v", fails[0])
	}
}
