package streampoll

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// The shards are read one at a time, parents before children (by their
// lineage, then their ids): a shard is read to its end, then the next.

// shards are the stream's shards in the order they are read.
func (r *run) shards(ctx context.Context) ([]string, error) {
	var all []types.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.p.StreamARN)}
	for {
		out, err := r.p.Streams.DescribeStream(ctx, in)
		if err != nil {
			return nil, err
		}
		all = append(all, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			break
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
	parent := map[string]string{}
	for _, s := range all {
		parent[aws.ToString(s.ShardId)] = aws.ToString(s.ParentShardId)
	}
	depth := func(id string) int {
		n := 0
		for p := parent[id]; p != ""; p = parent[p] {
			n++
		}
		return n
	}
	ids := make([]string, 0, len(all))
	for _, s := range all {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(depth(a), depth(b)), cmp.Compare(a, b)) })
	return ids, nil
}

// resume is where Run starts: after the checkpoint when it is of this
// stream and its shard is still there, else the first shard's trim
// horizon (said in the log when there was a checkpoint). A stream the
// endpoint does not describe is an error.
func (r *run) resume(ctx context.Context, cp checkpoint) (shard, after string, err error) {
	ids, err := r.shards(ctx)
	if err != nil {
		return "", "", fmt.Errorf("streampoll: stream %s: %w", r.p.StreamARN, err)
	}
	switch {
	case cp.StreamARN == r.p.StreamARN && slices.Contains(ids, cp.ShardID):
		return cp.ShardID, cp.SequenceNumber, nil
	case cp.StreamARN == r.p.StreamARN:
		r.p.Log.Warn("streampoll: the checkpoint's shard is no longer in the stream: reading from the trim horizon", "shard", cp.ShardID)
	case cp.StreamARN != "":
		r.p.Log.Warn("streampoll: the checkpoint is of another stream: reading from the trim horizon", "checkpoint", cp.StreamARN, "stream", r.p.StreamARN)
	}
	if len(ids) == 0 {
		shard, err = r.next(ctx, "")
		return shard, "", err
	}
	return ids[0], "", nil
}

// next is the shard read after shard ("": the first), once the stream
// has one: it waits for it.
func (r *run) next(ctx context.Context, shard string) (string, error) {
	for {
		ids, err := r.shards(ctx)
		if err == nil {
			i := 0
			if shard != "" {
				i = slices.Index(ids, shard) + 1
			}
			if i < len(ids) {
				return ids[i], nil
			}
		} else if ctx.Err() == nil {
			r.p.Log.Warn("streampoll: DescribeStream failed; retrying", "error", err)
		}
		if err := pause(ctx, retryAfter); err != nil {
			return "", err
		}
	}
}

// readShard reads a shard after the record after ("": from its trim
// horizon) to its end, invoking the function with its records.
func (r *run) readShard(ctx context.Context, shard, after string) error {
	r.shard, r.settled = shard, after
	if err := r.iterator(ctx); err != nil {
		return err
	}
	for {
		if err := r.fill(ctx); err != nil {
			return err
		}
		if err := r.step(ctx); err != nil {
			return err
		}
		if r.iter == "" && len(r.queue) == 0 {
			r.p.Log.Info("streampoll: shard read to its end", "shard", shard)
			return nil
		}
	}
}

// kept counts the queued records that match the filters.
func (r *run) kept() int {
	n := 0
	for _, rec := range r.queue {
		if rec.keep {
			n++
		}
	}
	return n
}

// fill reads records into the queue until it holds a batch: BatchSize
// records that match the filters, or fewer once the window has passed
// since the first, or only records to drop, or the rest of an ended
// shard.
func (r *run) fill(ctx context.Context) error {
	var deadline time.Time
	for {
		kept := r.kept()
		if kept > 0 && deadline.IsZero() {
			deadline = time.Now().Add(r.p.Mapping.Window)
		}
		switch {
		case kept >= r.p.Mapping.BatchSize, r.iter == "",
			kept > 0 && !time.Now().Before(deadline),
			kept == 0 && len(r.queue) > 0:
			return nil
		}
		got, err := r.read(ctx)
		if err != nil {
			return err
		}
		if got == 0 || kept == r.kept() {
			wait := pollEvery
			if !deadline.IsZero() {
				wait = min(wait, time.Until(deadline))
			}
			if err := pause(ctx, max(wait, 0)); err != nil {
				return err
			}
		}
	}
}
