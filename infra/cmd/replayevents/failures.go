package main

import (
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"errors"
	"fmt"
	"io"

	"github.com/cloud-agent/control-plane/infra/streamevent"
)

// readFailures reads the failed batches' ranges from r: a sequence of
// JSON values, each Lambda's on-failure record of a stream batch (a line
// of the local failure file; a message's body of SessionEventsFailures),
// or the answer of `aws sqs receive-message --output json`, whose
// messages' bodies are such records. Whitespace separates the values:
// JSON lines, or the bodies `--query 'Messages[].Body' --output text`
// prints, do.
func readFailures(r io.Reader) ([]Range, error) {
	dec := jsontext.NewDecoder(r)
	var out []Range
	for n := 1; ; n++ {
		v, err := dec.ReadValue()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", n, err)
		}
		var sqs struct {
			Messages []struct{ Body string } `json:"Messages"`
		}
		if err := jsonv2.Unmarshal(v, &sqs); err == nil && sqs.Messages != nil {
			for i, m := range sqs.Messages {
				rg, err := rangeOf([]byte(m.Body))
				if err != nil {
					return nil, fmt.Errorf("value %d, message %d: %w", n, i+1, err)
				}
				out = append(out, rg)
			}
			continue
		}
		rg, err := rangeOf(v)
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", n, err)
		}
		out = append(out, rg)
	}
}

// rangeOf is the range an on-failure record names.
func rangeOf(b []byte) (Range, error) {
	var f streamevent.Failure
	if err := jsonv2.Unmarshal(b, &f); err != nil {
		return Range{}, fmt.Errorf("not an on-failure record of a stream batch: %w", err)
	}
	bi := f.BatchInfo
	if bi.StreamARN == "" || bi.ShardID == "" || bi.StartSequenceNumber == "" || bi.EndSequenceNumber == "" {
		return Range{}, errors.New("an on-failure record without DDBStreamBatchInfo's streamArn, shardId, startSequenceNumber and endSequenceNumber")
	}
	return Range{StreamARN: bi.StreamARN, Shard: bi.ShardID, From: bi.StartSequenceNumber, To: bi.EndSequenceNumber}, nil
}
