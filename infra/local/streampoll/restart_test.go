package streampoll

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestRestartDeliversNothingTwice: a clean stop and a new poller on the
// same files deliver each record once, losing none.
func TestRestartDeliversNothingTwice(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	f := &fn{}
	stop := start(t, e.poller(f, base))
	waitFor(t, "the first records", func() bool { return len(f.seqs()) == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 12; i++ {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	all := e.streamSeqs(t)
	stop = start(t, e.poller(f, base))
	waitFor(t, "every record", func() bool { return len(f.seqs()) >= len(all) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.seqs(); !slices.Equal(got, all) {
		t.Errorf("delivered %v, want %v", got, all)
	}
}

// TestCheckpointOfAnotherStream: a checkpoint of another stream (an
// embedded endpoint started again), or one whose sequence number the
// stream refuses, reads from the trim horizon.
func TestCheckpointOfAnotherStream(t *testing.T) {
	for name, other := range map[string]func(e *env) checkpoint{
		"another stream": func(e *env) checkpoint {
			return checkpoint{"arn:aws:dynamodb:us-east-1:000000000000:table/Sessions/stream/2020-01-01T00:00:00.000", "shardId-1", "100000000000000000009"}
		},
		"a refused sequence number": func(e *env) checkpoint { return checkpoint{e.arn, e.shard(t), "100000000000000099999"} },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			for i := range 3 {
				e.put(t, fmt.Sprint("S#", i), "METADATA")
			}
			all := e.streamSeqs(t)
			if err := writeCheckpoint(filepath.Join(e.dir, "stream-checkpoint.json"), other(e)); err != nil {
				t.Fatal(err)
			}
			f := &fn{}
			stop := start(t, e.poller(f, base))
			waitFor(t, "the checkpoint at the last record", func() bool { return e.checkpointOf(t) == checkpoint{e.arn, e.shard(t), all[2]} })
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if got := f.seqs(); !slices.Equal(got, all) {
				t.Errorf("delivered %v, want %v", got, all)
			}
		})
	}
}

// TestKillMidBatch: the poller stopped while the function runs a batch
// (which then fails); a new poller from the checkpoint delivers every
// record at least once, and again only that batch.
func TestKillMidBatch(t *testing.T) {
	e := newEnv(t)
	for i := range 30 {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	all := e.streamSeqs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fn{answer: func(call int, _ []events.DynamoDBEventRecord) ([]byte, error) {
		if call == 2 {
			cancel()
			return nil, errors.New("killed")
		}
		return nil, nil
	}}
	p := e.poller(f, base)
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	killed := f.invocations()[1]
	if len(e.failures(t)) != 0 {
		t.Fatal("a failure on a stop")
	}
	g := &fn{}
	stop := start(t, e.poller(g, base))
	waitFor(t, "the checkpoint at the last record", func() bool { return e.checkpointOf(t).SequenceNumber == all[len(all)-1] })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	first := f.seqs()
	if got := append(slices.Clone(first), g.seqs()...); !slices.Equal(got, all) {
		t.Errorf("delivered %v then %v, want %v", first, g.seqs(), all)
	}
	if again := g.invocations()[0]; !slices.Equal(seqsOf(again), seqsOf(killed)) {
		t.Errorf("the new poller began with %v, want the killed batch %v", seqsOf(again), seqsOf(killed))
	}
}
