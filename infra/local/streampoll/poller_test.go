package streampoll

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// base is the template's mapping, with a short window.
var base = Mapping{BatchSize: 10, Window: 100 * time.Millisecond, MaxRetries: 10, Bisect: true, ReportBatchItemFailures: true}

// TestDeliversEveryRecordInOrder: each record once, in the order of the
// writes, in batches of at most BatchSize; the checkpoint ends at the
// last.
func TestDeliversEveryRecordInOrder(t *testing.T) {
	e := newEnv(t)
	for i := range 25 {
		e.put(t, fmt.Sprintf("S#%02d", i), "METADATA")
	}
	f := &fn{}
	stop := start(t, e.poller(f, base))
	want := e.streamSeqs(t)
	waitFor(t, "every record", func() bool { return len(f.seqs()) >= len(want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.seqs(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	for _, c := range f.invocations() {
		if len(c) > base.BatchSize {
			t.Errorf("a batch of %d records, over %d", len(c), base.BatchSize)
		}
	}
	r := f.invocations()[0][0]
	if r.EventSource != "aws:dynamodb" || r.EventVersion != "1.1" || r.EventName != "INSERT" || r.EventSourceArn != e.arn || r.AWSRegion != "us-east-1" {
		t.Errorf("record %+v", r)
	}
	if cp := e.checkpointOf(t); cp != (checkpoint{e.arn, e.shard(t), want[len(want)-1]}) {
		t.Errorf("checkpoint %+v", cp)
	}
}
