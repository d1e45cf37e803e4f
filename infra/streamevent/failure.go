package streamevent

import (
	jsonv2 "encoding/json/v2"
	"fmt"
	"slices"
)

// Why a batch went to the on-failure destination, as Lambda's invocation
// record says it (requestContext.condition).
const (
	RetriesExhausted = "RetryAttemptsExhausted"
	RecordTooOld     = "RecordAgeExceeded"
)

// Failure is Lambda's invocation record for a stream batch it discards
// (the on-failure destination's message; locally, a line of the failure
// file): it names the shard and the sequence range, not the records.
type Failure struct {
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	ResponseContext *ResponseContext `json:"responseContext,omitempty"`
	Version         string           `json:"version"`
	Timestamp       string           `json:"timestamp"`
	BatchInfo       BatchInfo        `json:"DDBStreamBatchInfo"`
}

// ResponseContext is the last invocation's answer, when there was one.
type ResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError,omitempty"`
}

// BatchInfo is the discarded batch: its stream, shard and the sequence
// numbers of its first and last records.
type BatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// ItemFailures reads a function's answer to a batch as Lambda does: no
// answer, null, an answer without batchItemFailures, or with it null or
// empty, is a success (no failed index); else failed are the indexes in
// batch of the records listed, in the answer's order. An itemIdentifier
// missing, null, empty or not one of the batch's sequence numbers, or an
// answer that is not a JSON object, fails the whole batch: why says so.
func ItemFailures(answer []byte, batch []Record) (failed []int, why string) {
	var resp struct {
		BatchItemFailures []map[string]any `json:"batchItemFailures"`
	}
	if len(answer) == 0 {
		return nil, ""
	}
	if err := jsonv2.Unmarshal(answer, &resp); err != nil {
		return nil, fmt.Sprintf("the answer is not an object with a batchItemFailures array: %v", err)
	}
	for _, f := range resp.BatchItemFailures {
		id, _ := f["itemIdentifier"].(string)
		i := slices.IndexFunc(batch, func(rec Record) bool { return rec.Seq == id })
		if i < 0 {
			return nil, fmt.Sprintf("the itemIdentifier %q is not a sequence number of the batch", id)
		}
		failed = append(failed, i)
	}
	return failed, ""
}
