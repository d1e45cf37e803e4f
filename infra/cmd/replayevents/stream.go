package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/cloud-agent/control-plane/infra/streamevent"
)

// Range is a failed batch's place in the stream: its shard and the
// sequence numbers of its first and last records.
type Range struct {
	StreamARN, Shard, From, To string
}

func (r Range) String() string {
	return fmt.Sprintf("shard %s, records %s to %s", r.Shard, r.From, r.To)
}

// The reading of an open shard: an empty page of GetRecords may come
// before the shard's next records, so a range whose end has not been
// read yet is read again, emptyReads times at most, emptyPause apart.
var (
	emptyReads = 20
	emptyPause = 250 * time.Millisecond
)

// ErrNotInStream is a range the stream no longer holds (over its 24
// hours) or never held.
var ErrNotInStream = errors.New("not in the stream")

// read reads the range's records from the stream, from its first record
// (AT_SEQUENCE_NUMBER) until past its last, each as Lambda's event holds
// it.
func read(ctx context.Context, sc *dynamodbstreams.Client, r Range) ([]streamevent.Record, error) {
	it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(r.StreamARN), ShardId: aws.String(r.Shard),
		ShardIteratorType: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(r.From),
	})
	if err != nil {
		return nil, streamError(r, err)
	}
	var recs []streamevent.Record
	iter, empty := it.ShardIterator, 0
	for iter != nil {
		out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			return nil, streamError(r, err)
		}
		for _, sr := range out.Records {
			rec, err := streamevent.Of(sr, r.StreamARN)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r, err)
			}
			if after(rec.Seq, r.To) {
				return recs, nil
			}
			recs = append(recs, rec)
		}
		if n := len(recs); n > 0 && recs[n-1].Seq == r.To {
			return recs, nil
		}
		if len(out.Records) > 0 {
			empty = 0
		} else if empty++; empty >= emptyReads {
			break
		} else if err := pause(ctx); err != nil {
			return nil, err
		}
		iter = out.NextShardIterator
	}
	return nil, fmt.Errorf("%s: %w: the shard holds no record up to the range's end (%d read)", r, ErrNotInStream, len(recs))
}

// pause waits emptyPause, after an empty page.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(emptyPause):
		return nil
	}
}

// streamError says what a refusal of the Streams API means for the
// range: trimmed (past the stream's 24 hours) or unknown is
// ErrNotInStream; anything else is the cause as it came.
func streamError(r Range, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "TrimmedDataAccessException":
			return fmt.Errorf("%s: %w: the stream has trimmed it (it keeps records 24 hours); its events cannot be put again from the stream", r, ErrNotInStream)
		case "ResourceNotFoundException":
			return fmt.Errorf("%s: %w: the stream %s or its shard is not there (%s)", r, ErrNotInStream, r.StreamARN, api.ErrorMessage())
		}
	}
	return fmt.Errorf("%s: %w", r, err)
}

// after reports whether the sequence number a comes after b: both are
// decimal numbers, of any length.
func after(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
