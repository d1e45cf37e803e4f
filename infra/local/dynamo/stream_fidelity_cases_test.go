package dynamo_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// The documentation the cases hold.
const (
	docViewType = "API Reference, StreamSpecification: KEYS_ONLY, only the key attributes of the modified item; NEW_IMAGE, the entire item as it appears after it was modified; OLD_IMAGE, as it appeared before; NEW_AND_OLD_IMAGES, both"
	docNoChange = "Developer Guide, Change data capture for DynamoDB Streams: if you perform a PutItem or UpdateItem operation that does not change any data in an item, DynamoDB Streams does not write a stream record for that operation"
	docRecord   = "API Reference (DynamoDB Streams), Record and StreamRecord: eventVersion, eventSource aws:dynamodb, awsRegion, SequenceNumber (numeric), SizeBytes, ApproximateCreationDateTime"
	docIterator = "API Reference (DynamoDB Streams), GetShardIterator: TRIM_HORIZON the oldest record, LATEST just after the most recent, AT_ and AFTER_SEQUENCE_NUMBER at and after that record"
	docUpdate   = "API Reference, UpdateTable: a ValidationException to enable a stream on a table that has one, or disable one on a table that has none; TableDescription: LatestStreamArn, LatestStreamLabel, StreamSpecification"
	docStreams  = "API Reference (DynamoDB Streams), DescribeStream and ListStreams: StreamStatus ENABLED or DISABLED (a disabled stream's shards are closed: an EndingSequenceNumber), the shard's StartingSequenceNumber"
	docLimits   = "API Reference (DynamoDB Streams), GetRecords: Limit up to 1000; ShardIterator, one a GetShardIterator returned"
)

func streamFidelityCases() []streamCase {
	all := []streamCase{}
	for _, c := range []struct {
		view types.StreamViewType
		want []string
	}{
		{types.StreamViewTypeKeysOnly, []string{"INSERT a", "MODIFY a", "MODIFY a", "REMOVE a"}},
		{types.StreamViewTypeNewImage, []string{"INSERT a new={PK:p,SK:a,v:1}", "MODIFY a new={PK:p,SK:a,v:2}", "MODIFY a new={PK:p,SK:a,v:2,w:3}", "REMOVE a"}},
		{types.StreamViewTypeOldImage, []string{"INSERT a", "MODIFY a old={PK:p,SK:a,v:1}", "MODIFY a old={PK:p,SK:a,v:2}", "REMOVE a old={PK:p,SK:a,v:2,w:3}"}},
		{types.StreamViewTypeNewAndOldImages, []string{"INSERT a new={PK:p,SK:a,v:1}", "MODIFY a old={PK:p,SK:a,v:1} new={PK:p,SK:a,v:2}",
			"MODIFY a old={PK:p,SK:a,v:2} new={PK:p,SK:a,v:2,w:3}", "REMOVE a old={PK:p,SK:a,v:2,w:3}"}},
	} {
		all = append(all, streamCase{name: "images_" + strings.ToLower(string(c.view)), doc: docViewType, view: c.view, want: c.want,
			run: func(f *streamFixture) []string {
				f.put("a", "v", "1")
				f.put("a", "v", "2")
				f.set("a", "w", "3")
				f.del("a")
				return lines(f.records(f.iterator(stypes.ShardIteratorTypeTrimHorizon, "")))
			}})
	}
	return append(all, joinCases(changeCases(), iteratorCases(), tableCases(), refusalCases())...)
}

// joinCases joins lists of cases.
func joinCases(lists ...[]streamCase) []streamCase {
	var all []streamCase
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// changeCases: which writes make records, in which order.
func changeCases() []streamCase {
	identical := &streamMoto{note: "moto records a MODIFY for every write, changed or not", want: []string{"INSERT a", "MODIFY a", "MODIFY a"}}
	return []streamCase{
		{name: "identical_put", doc: docNoChange, view: types.StreamViewTypeKeysOnly, want: []string{"INSERT a", "MODIFY a"}, moto: identical,
			run: func(f *streamFixture) []string { return f.twice(func() { f.put("a", "v", "1") }) }},
		{name: "unchanging_update", doc: docNoChange, view: types.StreamViewTypeKeysOnly, want: []string{"INSERT a", "MODIFY a"}, moto: identical,
			run: func(f *streamFixture) []string { return f.twice(func() { f.set("a", "v", "1") }) }},
		{name: "no_item_to_delete_nor_condition_met", doc: docNoChange, view: types.StreamViewTypeKeysOnly, want: []string{"INSERT b"},
			run: func(f *streamFixture) []string {
				f.del("a")
				_, err := f.c.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: av("PK", "p", "SK", "a"),
					ConditionExpression: aws.String("attribute_exists(PK)")})
				if apiCode(err) != "ConditionalCheckFailedException" {
					f.t.Fatalf("the conditional put: %v", err)
				}
				f.put("b")
				return lines(f.records(f.iterator(stypes.ShardIteratorTypeTrimHorizon, "")))
			}},
		{name: "transaction_and_batch_in_order", doc: "API Reference, TransactWriteItems and BatchWriteItem: each item written is a record, in the request's order",
			view: types.StreamViewTypeKeysOnly, want: []string{"INSERT c", "INSERT z", "INSERT a", "REMOVE c", "INSERT y", "INSERT x"},
			run: func(f *streamFixture) []string {
				f.put("c")
				f.must(f.c.TransactWriteItems(f.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Put: &types.Put{TableName: aws.String(f.table), Item: av("PK", "p", "SK", "z")}},
					{ConditionCheck: &types.ConditionCheck{TableName: aws.String(f.table), Key: av("PK", "p", "SK", "b"), ConditionExpression: aws.String("attribute_not_exists(PK)")}},
					{Put: &types.Put{TableName: aws.String(f.table), Item: av("PK", "p", "SK", "a")}},
					{Delete: &types.Delete{TableName: aws.String(f.table), Key: av("PK", "p", "SK", "c")}},
				}}))
				f.must(f.c.BatchWriteItem(f.ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{f.table: {
					{PutRequest: &types.PutRequest{Item: av("PK", "p", "SK", "y")}}, {PutRequest: &types.PutRequest{Item: av("PK", "p", "SK", "x")}}}}}))
				return lines(f.records(f.iterator(stypes.ShardIteratorTypeTrimHorizon, "")))
			}},
		{name: "record_members", doc: docRecord, view: types.StreamViewTypeNewImage,
			want: []string{"version 1.1, source aws:dynamodb, region us-east-1, view NEW_IMAGE, increasing true, sized true, dated true",
				"version 1.1, source aws:dynamodb, region us-east-1, view NEW_IMAGE, increasing true, sized true, dated true"},
			moto: &streamMoto{note: "moto's records are of eventVersion 1.0", want: []string{
				"version 1.0, source aws:dynamodb, region us-east-1, view NEW_IMAGE, increasing true, sized true, dated true",
				"version 1.0, source aws:dynamodb, region us-east-1, view NEW_IMAGE, increasing true, sized true, dated true"}},
			run: func(f *streamFixture) []string {
				f.put("a")
				f.put("b")
				return members(f.records(f.iterator(stypes.ShardIteratorTypeTrimHorizon, "")))
			}},
	}
}

// twice makes the item a of v 1, then writes it (write), then changes its
// v to 2, and renders the records.
func (f *streamFixture) twice(write func()) []string {
	f.put("a", "v", "1")
	write()
	f.set("a", "v", "2")
	return lines(f.records(f.iterator(stypes.ShardIteratorTypeTrimHorizon, "")))
}

// iteratorCases: where each iterator type starts.
func iteratorCases() []streamCase {
	return []streamCase{{name: "iterator_types", doc: docIterator, view: types.StreamViewTypeKeysOnly,
		want: []string{"TRIM_HORIZON: INSERT a, INSERT b, INSERT c, INSERT d", "LATEST: INSERT d", "AT_SEQUENCE_NUMBER: INSERT b, INSERT c, INSERT d",
			"AFTER_SEQUENCE_NUMBER: INSERT c, INSERT d", "AT the shard's StartingSequenceNumber: INSERT a, INSERT b, INSERT c, INSERT d"},
		run: func(f *streamFixture) []string {
			f.put("a")
			f.put("b")
			f.put("c")
			seq := aws.ToString(f.records(f.iterator(stypes.ShardIteratorTypeTrimHorizon, ""))[1].Dynamodb.SequenceNumber)
			start := aws.ToString(f.shard().SequenceNumberRange.StartingSequenceNumber)
			its := []string{f.iterator(stypes.ShardIteratorTypeTrimHorizon, ""), f.iterator(stypes.ShardIteratorTypeLatest, ""),
				f.iterator(stypes.ShardIteratorTypeAtSequenceNumber, seq), f.iterator(stypes.ShardIteratorTypeAfterSequenceNumber, seq),
				f.iterator(stypes.ShardIteratorTypeAtSequenceNumber, start)}
			f.put("d")
			var out []string
			for i, name := range []string{"TRIM_HORIZON", "LATEST", "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER", "AT the shard's StartingSequenceNumber"} {
				out = append(out, name+": "+strings.Join(lines(f.records(its[i])), ", "))
			}
			return out
		}}}
}

// tableCases: the table's and the stream's descriptions, as the stream is
// enabled and disabled.
func tableCases() []streamCase {
	return []streamCase{
		{name: "described", doc: docUpdate + "; " + docStreams, view: types.StreamViewTypeNewAndOldImages,
			want: []string{"CreateTable: arn of the label true, specification true NEW_AND_OLD_IMAGES", "DescribeTable: same arn true, specification true NEW_AND_OLD_IMAGES",
				"ListStreams: 1 stream, same arn true, same label true", "DescribeStream: ENABLED NEW_AND_OLD_IMAGES, table true, keys 2, shards 1, decimal start true, closed false"},
			run: func(f *streamFixture) []string {
				d := f.created
				out := []string{fmt.Sprintf("CreateTable: arn of the label %v, specification %v %s", strings.HasSuffix(f.arn, "/stream/"+aws.ToString(d.LatestStreamLabel)),
					aws.ToBool(d.StreamSpecification.StreamEnabled), d.StreamSpecification.StreamViewType)}
				desc, err := f.c.DescribeTable(f.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.table)})
				f.must(desc, err)
				out = append(out, fmt.Sprintf("DescribeTable: same arn %v, specification %v %s", aws.ToString(desc.Table.LatestStreamArn) == f.arn,
					aws.ToBool(desc.Table.StreamSpecification.StreamEnabled), desc.Table.StreamSpecification.StreamViewType))
				list, err := f.sc.ListStreams(f.ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(f.table)})
				f.must(list, err)
				out = append(out, fmt.Sprintf("ListStreams: %d stream, same arn %v, same label %v", len(list.Streams), aws.ToString(list.Streams[0].StreamArn) == f.arn,
					aws.ToString(list.Streams[0].StreamLabel) == aws.ToString(d.LatestStreamLabel)))
				return append(out, f.describeStream())
			}},
		{name: "disabled", doc: docUpdate + "; " + docStreams, view: types.StreamViewTypeKeysOnly,
			want: []string{"a write after: ", "DescribeTable: specification false, same arn true",
				"DescribeStream: DISABLED KEYS_ONLY, table true, keys 2, shards 1, decimal start true, closed true", "records: INSERT a"},
			moto: &streamMoto{note: "moto fails a write, and a DescribeStream, with HTTP 500 once it has disabled the table's stream",
				want: []string{"a write after: HTTP 500", "DescribeTable: specification false, same arn true", "DescribeStream: HTTP 500", "records: INSERT a"}},
			run: func(f *streamFixture) []string {
				f.put("a")
				it := f.iterator(stypes.ShardIteratorTypeTrimHorizon, "")
				f.must(f.c.UpdateTable(f.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(f.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}))
				_, err := f.c.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: av("PK", "p", "SK", "b")})
				desc, derr := f.c.DescribeTable(f.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.table)})
				f.must(desc, derr)
				return []string{"a write after: " + apiCode(err),
					fmt.Sprintf("DescribeTable: specification %v, same arn %v", desc.Table.StreamSpecification != nil, aws.ToString(desc.Table.LatestStreamArn) == f.arn),
					f.describeStream(), "records: " + strings.Join(lines(f.records(it)), ", ")}
			}},
		{name: "enabled_again", doc: docUpdate + " (re-enabling makes a new stream; ListStreams lists both)", view: types.StreamViewTypeKeysOnly,
			want: []string{"enabled again: , a new arn true, streams listed 2"},
			moto: &streamMoto{note: "moto cannot enable a stream on a table that had one (ResourceInUseException)", want: []string{"enabled again: ResourceInUseException, a new arn false, streams listed 1"}},
			run: func(f *streamFixture) []string {
				f.must(f.c.UpdateTable(f.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(f.table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}}))
				time.Sleep(2 * time.Millisecond) // a new label
				up, err := f.c.UpdateTable(f.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(f.table),
					StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}})
				again := ""
				if err == nil {
					again = aws.ToString(up.TableDescription.LatestStreamArn)
				}
				list, lerr := f.sc.ListStreams(f.ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(f.table)})
				f.must(list, lerr)
				return []string{fmt.Sprintf("enabled again: %s, a new arn %v, streams listed %d", apiCode(err), again != "" && again != f.arn, len(list.Streams))}
			}},
	}
}

// describeStream renders the stream's description.
func (f *streamFixture) describeStream() string {
	out, err := f.sc.DescribeStream(f.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(f.arn)})
	if err != nil {
		return "DescribeStream: " + apiCode(err)
	}
	s := out.StreamDescription
	decimal, closed := false, false
	if len(s.Shards) > 0 {
		r := s.Shards[0].SequenceNumberRange
		decimal = strings.Trim(aws.ToString(r.StartingSequenceNumber), "0123456789") == "" && r.StartingSequenceNumber != nil
		closed = r.EndingSequenceNumber != nil
	}
	return fmt.Sprintf("DescribeStream: %s %s, table %v, keys %d, shards %d, decimal start %v, closed %v", s.StreamStatus, s.StreamViewType,
		aws.ToString(s.TableName) == f.table, len(s.KeySchema), len(s.Shards), decimal, closed)
}

// refusalCases: what DynamoDB and DynamoDB Streams refuse.
func refusalCases() []streamCase {
	update := func(f *streamFixture, on bool, view types.StreamViewType) string {
		_, err := f.c.UpdateTable(f.ctx, &dynamodb.UpdateTableInput{TableName: aws.String(f.table),
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(on), StreamViewType: view}})
		return apiCode(err)
	}
	return []streamCase{
		{name: "enabled_twice", doc: docUpdate, view: types.StreamViewTypeKeysOnly, want: []string{"ValidationException"},
			moto: &streamMoto{note: "moto refuses a second stream with ResourceInUseException", want: []string{"ResourceInUseException"}},
			run:  func(f *streamFixture) []string { return []string{update(f, true, types.StreamViewTypeNewImage)} }},
		{name: "disabled_twice", doc: docUpdate, view: types.StreamViewTypeKeysOnly, want: []string{"", "ValidationException"},
			moto: &streamMoto{note: "moto disables a stream that is not there", want: []string{"", ""}},
			run: func(f *streamFixture) []string {
				return []string{update(f, false, ""), update(f, false, "")}
			}},
		{name: "enabled_without_view_type", doc: docUpdate + " (If stream is being enabled then UpdateViewType is required)", want: []string{"ValidationException"},
			moto: &streamMoto{note: "moto enables a stream without a view type", want: []string{""}},
			run:  func(f *streamFixture) []string { return []string{update(f, true, "")} }},
		{name: "iterator_not_given", doc: docLimits, view: types.StreamViewTypeKeysOnly, want: []string{"ValidationException"},
			moto: &streamMoto{note: "moto fails with HTTP 500 on an iterator it did not give", want: []string{"HTTP 500"}},
			run: func(f *streamFixture) []string {
				_, err := f.sc.GetRecords(f.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(f.arn + "|1|AAAAAAAAAAAAAAAAAAAA")})
				return []string{apiCode(err)}
			}},
		{name: "records_limit", doc: docLimits, view: types.StreamViewTypeKeysOnly, want: []string{"ValidationException"},
			moto: &streamMoto{note: "moto takes any Limit", want: []string{""}},
			run: func(f *streamFixture) []string {
				_, err := f.sc.GetRecords(f.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(f.iterator(stypes.ShardIteratorTypeLatest, "")), Limit: aws.Int32(1001)})
				return []string{apiCode(err)}
			}},
		{name: "unknown_stream", doc: "API Reference (DynamoDB Streams), DescribeStream: ResourceNotFoundException for a stream that does not exist", view: types.StreamViewTypeKeysOnly,
			want: []string{"ResourceNotFoundException"},
			run: func(f *streamFixture) []string {
				_, err := f.sc.DescribeStream(f.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(strings.Replace(f.arn, f.table, f.table+"-none", 1))})
				return []string{apiCode(err)}
			}},
	}
}
