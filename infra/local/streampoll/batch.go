package streampoll

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/cloud-agent/control-plane/infra/streamevent"
)

// record is a stream record read and not yet settled.
type record struct {
	streamevent.Record
	keep bool // it matches the mapping's filters
}

// read reads the records after the iterator into the queue, and says how
// many. An expired iterator is renewed after the settled record (the
// queue read again); a position the stream trimmed is logged and read
// from the trim horizon; other errors are logged and retried.
func (r *run) read(ctx context.Context) (int, error) {
	out, err := r.p.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
		ShardIterator: aws.String(r.iter), Limit: aws.Int32(int32(min(r.p.Mapping.BatchSize, 1000))),
	})
	switch code := apiCode(err); {
	case err == nil:
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case code == "ExpiredIteratorException":
		r.p.Log.Info("streampoll: the shard iterator expired: renewing it after the settled record", "shard", r.shard)
		return 0, r.iterator(ctx)
	case code == "TrimmedDataAccessException":
		r.p.Log.Warn("streampoll: the stream trimmed records not yet read: reading from its trim horizon", "shard", r.shard, "error", err)
		r.settled = ""
		return 0, r.iterator(ctx)
	default:
		r.p.Log.Warn("streampoll: GetRecords failed; retrying", "shard", r.shard, "error", err)
		return 0, pause(ctx, retryAfter)
	}
	for _, sr := range out.Records {
		rec, err := streamevent.Of(sr, r.p.StreamARN)
		if err != nil {
			return 0, fmt.Errorf("streampoll: shard %s: %w", r.shard, err)
		}
		r.queue = append(r.queue, record{Record: rec, keep: keep(r.filters, rec.JSON)})
	}
	r.iter = aws.ToString(out.NextShardIterator)
	return len(out.Records), nil
}

// through is the index of the queue's last record before its (n+1)th
// kept one (-1: none).
func (r *run) through(n int) int {
	for i, rec := range r.queue {
		if rec.keep {
			if n == 0 {
				return i - 1
			}
			n--
		}
	}
	return len(r.queue) - 1
}

// step settles the queue's head: a batch of up to BatchSize kept records,
// and the records to drop before and among them, or only records to
// drop; then it writes the checkpoint. When ctx ends during the batch, it
// settles what the function took.
func (r *run) step(ctx context.Context) error {
	end := r.through(r.p.Mapping.BatchSize)
	var batch []record
	for _, rec := range r.queue[:end+1] {
		if rec.keep {
			batch = append(batch, rec)
		}
	}
	var err error
	if len(batch) > 0 {
		var done int
		if done, err = r.attempt(ctx, batch, 0); done < len(batch) {
			end = r.through(done)
		}
	}
	if end < 0 {
		return err
	}
	r.settled, r.queue = r.queue[end].Seq, r.queue[end+1:]
	if werr := writeCheckpoint(r.p.Checkpoint, checkpoint{r.p.StreamARN, r.shard, r.settled}); werr != nil {
		return werr
	}
	return err
}

// retryDelay is how long a failed batch waits before its retry n (from
// 0): Lambda backs off too, by an amount it does not document.
func retryDelay(n int) time.Duration {
	return min(100*time.Millisecond<<min(n, 5), 2*time.Second)
}

// attempt delivers a batch, its retries counted from retries: it
// invokes the function until it takes every record, retrying from the
// first record it fails on (batchItemFailures) or the whole batch, and
// with Bisect splitting a batch the function errs on (without counting a
// retry). Records too old, and those still failing when the retries run
// out, go to the failure file. It returns how many records, from the
// first, are settled; fewer than all only when ctx ended.
func (r *run) attempt(ctx context.Context, batch []record, retries int) (int, error) {
	m, done, invokes := r.p.Mapping, 0, 0
	var last *streamevent.ResponseContext
	for {
		if n := r.tooOld(batch); n > 0 {
			if err := r.discard(batch[:n], streamevent.RecordTooOld, invokes, last); err != nil {
				return done, err
			}
			done, batch = done+n, batch[n:]
		}
		if len(batch) == 0 {
			return done, nil
		}
		failed, err := r.invoke(ctx, batch)
		invokes++
		if ctx.Err() != nil {
			return done, ctx.Err()
		}
		last = &streamevent.ResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"}
		switch {
		case err != nil && m.Bisect && len(batch) > 1:
			r.p.Log.Info("streampoll: function error: bisecting the batch", "records", len(batch), "error", err)
			h := len(batch) / 2
			n, err := r.attempt(ctx, batch[:h], retries)
			if err == nil {
				n2, err2 := r.attempt(ctx, batch[h:], retries)
				n, err = n+n2, err2
			}
			return done + n, err
		case err != nil:
			last.FunctionError = "Unhandled"
			r.p.Log.Info("streampoll: function error", "records", len(batch), "error", err)
		case failed == len(batch):
			return done + failed, nil
		}
		done, batch = done+failed, batch[failed:]
		if m.MaxRetries >= 0 && retries >= m.MaxRetries {
			return done + len(batch), r.discard(batch, streamevent.RetriesExhausted, invokes, last)
		}
		if err := pause(ctx, retryDelay(retries)); err != nil {
			return done, err
		}
		retries++
	}
}

// tooOld counts the batch's first records older than MaxRecordAge.
func (r *run) tooOld(batch []record) int {
	n := 0
	for n < len(batch) && r.p.Mapping.MaxRecordAge > 0 && time.Since(batch[n].At) > r.p.Mapping.MaxRecordAge {
		n++
	}
	return n
}

// discard writes a batch to the failure file, and logs it.
func (r *run) discard(batch []record, condition string, invokes int, last *streamevent.ResponseContext) error {
	f := newFailure(r.p, r.shard, batch, condition, invokes, last, time.Now())
	r.p.Log.Warn("streampoll: a batch goes to the failure file", "condition", condition, "shard", r.shard,
		"start", f.BatchInfo.StartSequenceNumber, "end", f.BatchInfo.EndSequenceNumber, "records", len(batch))
	return appendFailure(r.p.Failures, f)
}

// invoke invokes the function with a batch: a function error is err;
// else failed is the index of the first record to retry (len(batch):
// none), read from the answer when ReportBatchItemFailures is on: Lambda
// retries from the lowest sequence number listed.
func (r *run) invoke(ctx context.Context, batch []record) (failed int, err error) {
	recs := make([]streamevent.Record, len(batch))
	for i, rec := range batch {
		recs[i] = rec.Record
	}
	ev, err := streamevent.Event(recs)
	if err != nil {
		return 0, fmt.Errorf("streampoll: the event: %w", err)
	}
	answer, err := r.p.Invoke(ctx, ev)
	if err != nil {
		return 0, err
	}
	if !r.p.Mapping.ReportBatchItemFailures {
		return len(batch), nil
	}
	listed, why := streamevent.ItemFailures(answer, recs)
	if why != "" {
		r.p.Log.Warn("streampoll: the function's batchItemFailures fail the whole batch", "why", why)
		return 0, nil
	}
	return slices.Min(append(listed, len(batch))), nil
}
