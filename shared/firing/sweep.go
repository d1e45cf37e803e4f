package firing

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// sweepLimit bounds the overdue sessions that one query of a live shard
// finds, and so the marks of a shard a minute: 16 shards of 100 are at
// most 1,600 transactions a minute, well within the function's minute. A
// larger backlog drains over the next minutes, the longest silent first.
const sweepLimit = 100

// sweep marks timed_out the overdue sessions of the shards as of the
// event's time at (contract v7, "Lost outcomes"): those silent, since
// their start or their runner's last heartbeat, since before at less
// outcome/timeout-minutes, the setting in force now. It is one query of
// each shard's live partition, in parallel, then one transaction for each
// session found, concurrency() at a time at most, none once stop (zero:
// never) has begun. A mark that a report or a heartbeat overtook marks
// nothing. The marks count as TimedOut; a fault is the invocation's, and
// leaves what it did not mark for the next minute.
func (f *Firing) sweep(ctx context.Context, at time.Time, shards []int, stop time.Time, inv *tally) {
	timeout, err := f.Settings.OutcomeTimeout(ctx)
	if err != nil {
		inv.swept(false, err)
		return
	}
	before := at.Add(-timeout)
	marks := make(chan struct{}, f.concurrency())
	var wg sync.WaitGroup
	for _, shard := range shards {
		wg.Go(func() {
			found, err := f.Table.OverdueSessions(ctx, shard, before, sweepLimit)
			if err != nil {
				inv.swept(false, err)
				return
			}
			for _, s := range found {
				if !stop.IsZero() && !time.Now().Before(stop) {
					return
				}
				marks <- struct{}{}
				wg.Go(func() {
					defer func() { <-marks }()
					marked, err := f.Table.MarkTimedOut(ctx, s, at)
					if err != nil {
						err = fmt.Errorf("session %s: %w", s.SessionID, err)
					}
					inv.swept(marked, err)
				})
			}
		})
	}
	wg.Wait()
}
