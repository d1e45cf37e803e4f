package streampoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
)

// Mapping is an event source mapping's settings, as the template gives
// them.
type Mapping struct {
	// BatchSize is the most records of an invocation (BatchSize, 1 to
	// 10,000).
	BatchSize int
	// Window is how long records are gathered, from the first one, before
	// the function is invoked with fewer than BatchSize
	// (MaximumBatchingWindowInSeconds; 0: as soon as there are records).
	Window time.Duration
	// MaxRetries is how many times a failed batch is retried before it
	// goes to the failure file (MaximumRetryAttempts; -1: until its
	// records are too old).
	MaxRetries int
	// Bisect splits a batch that the function failed on in two and
	// retries each half, without counting a retry
	// (BisectBatchOnFunctionError).
	Bisect bool
	// MaxRecordAge is the age past which a record is not sent to the
	// function but to the failure file (MaximumRecordAgeInSeconds; 0: no
	// limit).
	MaxRecordAge time.Duration
	// ReportBatchItemFailures reads the function's batchItemFailures
	// (FunctionResponseTypes [ReportBatchItemFailures]).
	ReportBatchItemFailures bool
	// Filters are the FilterCriteria's patterns (JSON, as in the
	// template): a record that matches none is never sent, and its
	// position is settled. None: every record is sent.
	Filters []string
}

// check refuses settings Lambda refuses.
func (m Mapping) check() error {
	switch {
	case m.BatchSize < 1 || m.BatchSize > 10_000:
		return fmt.Errorf("batch size %d: it is 1 to 10,000", m.BatchSize)
	case m.Window < 0 || m.Window > 300*time.Second:
		return fmt.Errorf("batching window %v: it is 0 to 300 seconds", m.Window)
	case m.MaxRetries < -1 || m.MaxRetries > 10_000:
		return fmt.Errorf("maximum retry attempts %d: it is -1 to 10,000", m.MaxRetries)
	case m.MaxRecordAge < 0:
		return fmt.Errorf("maximum record age %v: it is 0 (no limit) or more", m.MaxRecordAge)
	}
	return nil
}

// Poller is a local event source mapping: it reads a DynamoDB stream
// through the Streams API and invokes a function with its records as
// Lambda does, keeping its position in a checkpoint file and the batches
// it gives up on in a failure file.
type Poller struct {
	// Streams is the client of the Streams API, StreamARN the stream's
	// ARN.
	Streams   *dynamodbstreams.Client
	StreamARN string
	Mapping   Mapping
	// Invoke invokes the function with an event and returns its answer;
	// an error is a function error. It is called from one goroutine at a
	// time.
	Invoke func(ctx context.Context, event []byte) ([]byte, error)
	// FunctionARN names the function in the failure file's records.
	FunctionARN string
	// Checkpoint is the checkpoint file's path: {"streamArn", "shardId",
	// "sequenceNumber"} of the last record settled. Failures is the
	// failure file's: one JSON line per batch given up on.
	Checkpoint, Failures string
	Log                  *slog.Logger
}

// Timings of the poller (Lambda polls a shard four times a second).
var (
	pollEvery  = 250 * time.Millisecond
	retryAfter = time.Second // after an error of the Streams API
)

// Run polls the stream and invokes the function until ctx ends, then
// returns nil. It resumes after the checkpoint when the checkpoint is of
// the stream, else reads from the trim horizon. It returns an error,
// without reading, for settings Lambda refuses or a stream that is not
// there, and when it cannot write its files.
func (p *Poller) Run(ctx context.Context) error {
	if err := p.Mapping.check(); err != nil {
		return err
	}
	if p.Checkpoint == "" || p.Failures == "" || p.Invoke == nil || p.Log == nil {
		return errors.New("streampoll: a poller needs Invoke, Log, and its checkpoint and failure files")
	}
	filters, err := parseFilters(p.Mapping.Filters)
	if err != nil {
		return err
	}
	cp, err := readCheckpoint(p.Checkpoint)
	if err != nil {
		return err
	}
	r := &run{p: p, filters: filters}
	shard, after, err := r.resume(ctx, cp)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		if err := r.readShard(ctx, shard, after); err != nil || ctx.Err() != nil {
			return quiet(ctx, err)
		}
		if shard, err = r.next(ctx, shard); err != nil {
			return quiet(ctx, err)
		}
		after = ""
	}
	return nil
}

// quiet is err, or nil once ctx has ended.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// run is a Run's state.
type run struct {
	p       *Poller
	filters []filter
	shard   string   // the shard read
	settled string   // its last record settled ("": none yet)
	iter    string   // the iterator after the last record read ("": the shard ended)
	queue   []record // read, not yet settled
}

// apiCode is the error code of an answer of the Streams API ("": not an
// answer).
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// iterator gets an iterator after the settled record (at the trim
// horizon when none is). A position the stream refuses (a sequence
// number it does not have, or one it trimmed) is logged and read from
// the trim horizon instead; other errors are retried.
func (r *run) iterator(ctx context.Context) error {
	for {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.p.StreamARN), ShardId: aws.String(r.shard),
			ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
		if r.settled != "" {
			in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(r.settled)
		}
		out, err := r.p.Streams.GetShardIterator(ctx, in)
		switch code := apiCode(err); {
		case err == nil:
			r.iter, r.queue = aws.ToString(out.ShardIterator), nil
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case r.settled != "" && (code == "ValidationException" || code == "TrimmedDataAccessException"):
			r.p.Log.Warn("streampoll: the stream refuses the settled position: reading the shard from its trim horizon",
				"shard", r.shard, "after", r.settled, "error", err)
			r.settled = ""
			continue
		}
		r.p.Log.Warn("streampoll: GetShardIterator failed; retrying", "shard", r.shard, "error", err)
		if err := pause(ctx, retryAfter); err != nil {
			return err
		}
	}
}
