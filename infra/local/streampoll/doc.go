// Package streampoll is the local stack's event source mapping for a
// DynamoDB stream: a Poller reads the stream through the DynamoDB Streams
// API (the SDK's dynamodbstreams client, against the embedded endpoint,
// moto or DynamoDB Local) and invokes a function with its records as
// Lambda does: the event of aws-lambda-go's events.DynamoDBEvent, in
// batches of up to BatchSize records gathered for up to the batching
// window, only the records that match the FilterCriteria's patterns;
// batchItemFailures read by Lambda's rules, retries, bisection on a
// function error, the maximum record age; a batch given up on written to
// a failure file as Lambda's on-failure destination gets it (the shard
// and the sequence range, not the records). It keeps the last record it
// settled in a checkpoint file and resumes after it, so that a clean
// restart neither loses a record nor delivers one twice; after a crash,
// the batch under way is delivered again (at least once, as Lambda).
//
// It reads one shard at a time, a closed shard to its end and then its
// children: the embedded endpoint's stream has one shard. docs/local.md
// says where it differs from Lambda.
package streampoll
