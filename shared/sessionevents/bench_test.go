package sessionevents_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/shared/store"
)

// BenchmarkAnnounce: a full batch of the stream (100 new sessions, as the
// mapping hands at most) announced through the KMS and EventBridge
// stand-ins, over HTTP: each session's token derived (no cache helps: a
// new session), 10 PutEvents calls. It reports the events a second one
// invocation announces, and the CPU per event of this process (the
// function's side and the stand-ins' together: an upper bound of the
// function's own), which benchtable sets against BenchmarkNext.
func BenchmarkAnnounce(b *testing.B) {
	const batchSize = 100
	s := newStack(b, "")
	n := 0
	batch := func() events.DynamoDBEvent {
		var ev events.DynamoDBEvent
		for i := range batchSize {
			n++
			id := fmt.Sprintf("workspace_%08x-0000-4000-8000-%012x", n, i)
			ev.Records = append(ev.Records, record(b, fmt.Sprint(n), "INSERT", nil, store.EncodeSession(newRecord(id))))
		}
		return ev
	}
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		ev := batch()
		before := cpuTime(b)
		b.StartTimer()
		resp, err := s.svc.Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("%+v %v", resp, err)
		}
		b.StopTimer()
		cpu += cpuTime(b) - before
		b.StartTimer()
	}
	elapsed := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(batchSize/elapsed, "events/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batchSize), "cpu-ns/event")
}

// cpuTime is the CPU this process has spent so far.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	runtime.Gosched()
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
