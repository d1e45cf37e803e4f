// Package dynamo is the embedded DynamoDB endpoint of the local stack: an
// in-memory engine that answers DynamoDB's JSON protocol over HTTP, so
// that the product's code, the AWS SDKs and the AWS CLI talk to it as to
// DynamoDB. `make run`, the tests and the benchmarks use it.
//
// What it is: DynamoDB's data model and API for the operations the product
// uses (tables with global and local secondary indexes, a time to live
// and a stream; PutItem, GetItem, UpdateItem, DeleteItem, Query, Scan,
// BatchWriteItem, BatchGetItem, TransactWriteItems, TransactGetItems),
// and the DynamoDB Streams API for the tables' streams (ListStreams,
// DescribeStream, GetShardIterator, GetRecords; stream.go), checked as
// DynamoDB checks them and answered as DynamoDB answers them: the same
// error types, the same members. A request costs by the items it touches, not by the
// table: items sit in B-trees in a scan's order (by a hash of the
// partition key) and each index has its own; a transaction judges every
// action before it changes anything, so nothing is copied to roll back.
// One lock guards the tables, held only while a request works on its items.
// Expired items are swept once a minute (Endpoint); reads return them until
// then, as DynamoDB's do.
//
// What it costs: the firing's requests over HTTP (BenchmarkFiredOverHTTP)
// spend, in the endpoint's process, its own work (decoding, judging,
// writing the items and their indexes, the answer), Go's HTTP server and
// the sockets, and the garbage collector. An attribute value is 40 bytes,
// an item's strings share one copy of it, numbers already canonical are
// kept as they come, and request and answer buffers are reused, so that a
// fired trigger's transaction allocates about 21 KB. The endpoint's own
// process (dynamotest.Separate) runs its collector at a GOGC of 400 rather
// than 100, under a soft limit of 512 MiB (its heap is small, and at 100
// the collector took about a sixth of its CPU), and on one thread.
//
// What it is not: a store (everything is in memory; `make run -data` saves
// and loads a file through the API), a model of DynamoDB's capacity,
// throttling, consistency delays or transaction conflicts (requests are
// serialized, so a conflict never happens: the product's handling of
// TransactionConflict is tested directly), nor of the older parameters
// (Expected, AttributesToGet, KeyConditions and the like: it refuses them).
// docs/local.md lists what it still does differently.
package dynamo
