package dynamo_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
)

// TestStreamNoRecordUnchanged: DynamoDB writes a stream record only when
// an item changes (Developer Guide, "Change data capture for DynamoDB
// Streams": a PutItem or UpdateItem that does not change any data in an
// item writes none), so none of these writes makes one, while the last,
// which changes the item, makes one MODIFY.
func TestStreamNoRecordUnchanged(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	const table = "unchanged"
	arn := streamTable(t, e.c, table, types.StreamViewTypeNewAndOldImages)
	item := func() map[string]types.AttributeValue {
		it := av("PK", "p", "SK", "s", "v", "1")
		it["n"] = &types.AttributeValueMemberN{Value: "10"}
		it["tags"] = &types.AttributeValueMemberSS{Value: []string{"a", "b"}}
		return it
	}
	e.put(t, table, item())
	it := iteratorAt(t, e.sc, arn, stypes.ShardIteratorTypeLatest, "")
	same := item()
	same["n"] = &types.AttributeValueMemberN{Value: "10.0"}                 // the same number
	same["tags"] = &types.AttributeValueMemberSS{Value: []string{"b", "a"}} // the same set
	for name, write := range map[string]func() error{
		"an identical put": func() error {
			_, err := e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: same})
			return err
		},
		"an update to the same value": func() error {
			_, err := e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: av("PK", "p", "SK", "s"),
				UpdateExpression: aws.String("SET v = :v REMOVE absent"), ExpressionAttributeValues: av(":v", "1")})
			return err
		},
		"a delete of no item": func() error {
			_, err := e.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: av("PK", "p", "SK", "none")})
			return err
		},
		"an identical put in a transaction, and a delete of no item": func() error {
			_, err := e.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(table), Item: item()}},
				{Delete: &types.Delete{TableName: aws.String(table), Key: av("PK", "p", "SK", "none")}}}})
			return err
		},
		"a batch's identical put": func() error {
			_, err := e.c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				table: {{PutRequest: &types.PutRequest{Item: item()}}, {DeleteRequest: &types.DeleteRequest{Key: av("PK", "p", "SK", "none")}}}}})
			return err
		},
		"a put whose condition fails": func() error {
			_, err := e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: av("PK", "p", "SK", "s"),
				ConditionExpression: aws.String("attribute_not_exists(PK)")})
			if apiCode(err) == "ConditionalCheckFailedException" {
				return nil
			}
			return err
		},
	} {
		if err := write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: av("PK", "p", "SK", "s"),
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: av(":v", "2")}); err != nil {
		t.Fatal(err)
	}
	e.expect(t, it, "MODIFY s")
}

// TestStreamTTLRemove: an item the time to live deletes is a REMOVE whose
// userIdentity is the service (Developer Guide, "DynamoDB Streams and
// Time to Live": Type Service, PrincipalId dynamodb.amazonaws.com); one a
// request deletes has none.
func TestStreamTTLRemove(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	const table = "expiring"
	arn := streamTable(t, e.c, table, types.StreamViewTypeOldImage)
	if _, err := e.c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expiresAt"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	for sk, at := range map[string]time.Duration{"expired": -time.Minute, "deleted": -time.Minute, "later": time.Hour} {
		it := av("PK", "p", "SK", sk)
		it["expiresAt"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(e.clock.Now().Add(at).Unix(), 10)}
		e.put(t, table, it)
	}
	if _, err := e.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: av("PK", "p", "SK", "deleted")}); err != nil {
		t.Fatal(err)
	}
	if n := e.db.Sweep(); n != 1 {
		t.Fatalf("swept %d", n)
	}
	recs, _ := readAll(t, e.sc, e.horizon(t, arn), 1000)
	removes := 0
	for _, r := range recs {
		if r.EventName != stypes.OperationTypeRemove {
			continue
		}
		removes++
		sk := r.Dynamodb.Keys["SK"].(*stypes.AttributeValueMemberS).Value
		id := r.UserIdentity
		switch {
		case sk == "expired" && (id == nil || aws.ToString(id.Type) != "Service" || aws.ToString(id.PrincipalId) != "dynamodb.amazonaws.com"):
			t.Errorf("the expired item's REMOVE: userIdentity %+v", id)
		case sk == "expired" && r.Dynamodb.OldImage["expiresAt"] == nil:
			t.Errorf("the expired item's REMOVE: OldImage %v", r.Dynamodb.OldImage)
		case sk == "deleted" && id != nil:
			t.Errorf("the deleted item's REMOVE: userIdentity %+v", id)
		}
	}
	if removes != 2 {
		t.Errorf("%d REMOVEs in %v", removes, events(recs))
	}
}

// TestStreamExpiredIterator: a shard iterator expires 15 minutes after it
// is issued (API Reference, GetShardIterator): ExpiredIteratorException;
// the NextShardIterator a GetRecords answers is new, and reads on.
func TestStreamExpiredIterator(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	arn := streamTable(t, e.c, "iterated", types.StreamViewTypeKeysOnly)
	it := e.horizon(t, arn)
	e.clock.Add(14 * time.Minute)
	out, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	if err != nil {
		t.Fatalf("at 14 minutes: %v", err)
	}
	e.clock.Add(2 * time.Minute)
	if _, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)}); apiCode(err) != "ExpiredIteratorException" {
		t.Errorf("at 16 minutes: %v, want ExpiredIteratorException", err)
	}
	e.put(t, "iterated", av("PK", "p", "SK", "s"))
	e.expect(t, aws.ToString(out.NextShardIterator), "INSERT s")
}

// TestStreamTrimmed: records are kept 24 hours (Developer Guide, "DynamoDB
// Streams"): TRIM_HORIZON then starts after them, and an iterator at a
// trimmed record (asked for then, or issued before the trimming) meets
// TrimmedDataAccessException. Past the endpoint's cap of records, the
// oldest are trimmed alike.
func TestStreamTrimmed(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	const table = "trimmed"
	arn := streamTable(t, e.c, table, types.StreamViewTypeKeysOnly)
	e.put(t, table, av("PK", "p", "SK", "old"))
	old, _ := readAll(t, e.sc, e.horizon(t, arn), 10)
	seq := aws.ToString(old[0].Dynamodb.SequenceNumber)
	e.clock.Add(24*time.Hour - 5*time.Minute)
	e.put(t, table, av("PK", "p", "SK", "new"))
	before := iteratorAt(t, e.sc, arn, stypes.ShardIteratorTypeAtSequenceNumber, seq)
	e.clock.Add(10 * time.Minute)
	if _, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(before)}); apiCode(err) != "TrimmedDataAccessException" {
		t.Errorf("an iterator issued before the trimming: %v", err)
	}
	shard, _ := shardOf(t, e.sc, arn)
	if _, err := e.sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(shard),
		ShardIteratorType: stypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(seq)}); apiCode(err) != "TrimmedDataAccessException" {
		t.Errorf("AT_SEQUENCE_NUMBER of a trimmed record: %v", err)
	}
	e.expect(t, e.horizon(t, arn), "INSERT new")
	// The cap.
	capped := newStreamEnv(t)
	dynamo.SetStreamCap(capped.db, 3)
	arn = streamTable(t, capped.c, table, types.StreamViewTypeKeysOnly)
	for _, sk := range []string{"a", "b", "c", "d", "e"} {
		capped.put(t, table, av("PK", "p", "SK", sk))
	}
	capped.expect(t, capped.horizon(t, arn), "INSERT c", "INSERT d", "INSERT e")
}

// TestStreamTableAttributes: a table's stream as DynamoDB describes it
// (API Reference, TableDescription, UpdateTable; DynamoDB Streams,
// ListStreams and DescribeStream): CreateTable, DescribeTable and
// UpdateTable answer LatestStreamArn, LatestStreamLabel and the
// StreamSpecification; disabling the stream leaves the specification out
// and the latest ARN in, and closes its shard (DISABLED, an
// EndingSequenceNumber, read to its end without a NextShardIterator);
// enabling it again makes a new stream, and ListStreams lists both, and a
// deleted table's, for 24 hours.
func TestStreamTableAttributes(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	const table = "described"
	arn := streamTable(t, e.c, table, types.StreamViewTypeNewImage)
	desc := func() *types.TableDescription {
		t.Helper()
		out, err := e.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Table
	}
	d := desc()
	label := aws.ToString(d.LatestStreamLabel)
	if arn == "" || aws.ToString(d.LatestStreamArn) != arn || arn != aws.ToString(d.TableArn)+"/stream/"+label || len(label) != len("2006-01-02T15:04:05.000") ||
		d.StreamSpecification == nil || !aws.ToBool(d.StreamSpecification.StreamEnabled) || d.StreamSpecification.StreamViewType != types.StreamViewTypeNewImage {
		t.Errorf("described: arn %s (created %s), label %s, specification %+v", aws.ToString(d.LatestStreamArn), arn, label, d.StreamSpecification)
	}
	e.put(t, table, av("PK", "p", "SK", "s"))
	it := e.horizon(t, arn)
	up, err := e.c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table), StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)}})
	if err != nil {
		t.Fatal(err)
	}
	if d := desc(); d.StreamSpecification != nil || aws.ToString(d.LatestStreamArn) != arn || aws.ToString(up.TableDescription.LatestStreamArn) != arn {
		t.Errorf("disabled: specification %+v, latest %s", d.StreamSpecification, aws.ToString(d.LatestStreamArn))
	}
	sd, err := e.sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if s := sd.StreamDescription; s.StreamStatus != stypes.StreamStatusDisabled || s.Shards[0].SequenceNumberRange.EndingSequenceNumber == nil ||
		aws.ToString(s.TableName) != table || s.StreamViewType != stypes.StreamViewTypeNewImage || len(s.KeySchema) != 2 {
		t.Errorf("the disabled stream: %+v", s)
	}
	out, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
	if err != nil || len(out.Records) != 1 || out.NextShardIterator != nil {
		t.Errorf("the closed shard read to its end: %d records, next %v, %v", len(out.Records), out.NextShardIterator, err)
	}
	out, err = e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(iteratorAt(t, e.sc, arn, stypes.ShardIteratorTypeLatest, ""))})
	if err != nil || len(out.Records) != 0 || out.NextShardIterator != nil {
		t.Errorf("the closed shard from LATEST: %d records, next %v, %v", len(out.Records), out.NextShardIterator, err)
	}
	e.clock.Add(time.Millisecond)
	up, err = e.c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	if err != nil {
		t.Fatal(err)
	}
	again := aws.ToString(up.TableDescription.LatestStreamArn)
	if again == arn || aws.ToString(desc().LatestStreamArn) != again {
		t.Errorf("enabled again: %s, then %s", arn, again)
	}
	streamTable(t, e.c, "gone", types.StreamViewTypeKeysOnly)
	if _, err := e.c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	listed := func(name string, limit int32) []string {
		var arns []string
		in := &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(limit)}
		if name != "" {
			in.TableName = aws.String(name)
		}
		for {
			out, err := e.sc.ListStreams(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range out.Streams {
				arns = append(arns, aws.ToString(s.TableName)+" "+aws.ToString(s.StreamLabel))
			}
			if in.ExclusiveStartStreamArn = out.LastEvaluatedStreamArn; in.ExclusiveStartStreamArn == nil {
				return arns
			}
		}
	}
	if got := listed(table, 100); len(got) != 2 {
		t.Errorf("the table's streams: %v", got)
	}
	if got := listed("", 1); len(got) != 3 || got[0][:4] != "desc" || got[2][:4] != "gone" {
		t.Errorf("the streams, a page of one at a time: %v", got)
	}
	e.clock.Add(24*time.Hour + time.Minute)
	if got := listed("", 100); len(got) != 1 {
		t.Errorf("24 hours later: %v", got)
	}
	e.db.Sweep()
	if _, err := e.sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("the stream disabled 24 hours ago: %v", err)
	}
}

// TestStreamRefusals: what DynamoDB and DynamoDB Streams refuse, with the
// error type they answer (API Reference; the messages DynamoDB gives for
// a StreamSpecification).
func TestStreamRefusals(t *testing.T) {
	e := newStreamEnv(t)
	ctx := context.Background()
	arn := streamTable(t, e.c, "refusing", types.StreamViewTypeKeysOnly)
	streamTable(t, e.c, "plain", "")
	shard, start := shardOf(t, e.sc, arn)
	spec := func(on bool, view types.StreamViewType) *types.StreamSpecification {
		return &types.StreamSpecification{StreamEnabled: aws.Bool(on), StreamViewType: view}
	}
	update := func(table string, s *types.StreamSpecification) error {
		_, err := e.c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table), StreamSpecification: s})
		return err
	}
	iterator := func(typ stypes.ShardIteratorType, seq string, on string) error {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: aws.String(on), ShardIteratorType: typ}
		if seq != "" {
			in.SequenceNumber = aws.String(seq)
		}
		_, err := e.sc.GetShardIterator(ctx, in)
		return err
	}
	records := func(it string, limit int32) error {
		_, err := e.sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it), Limit: aws.Int32(limit)})
		return err
	}
	describe := func(arn string) error {
		_, err := e.sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		return err
	}
	tableArn := "arn:aws:dynamodb:us-east-1:000000000000:table/"
	for _, c := range []struct {
		name, want string
		err        error
	}{
		{"enabling a second stream", "ValidationException", update("refusing", spec(true, types.StreamViewTypeKeysOnly))},
		{"changing the view type in place", "ValidationException", update("refusing", spec(true, types.StreamViewTypeNewImage))},
		{"disabling no stream", "ValidationException", update("plain", spec(false, ""))},
		{"enabling without a view type", "ValidationException", update("plain", spec(true, ""))},
		{"disabling with a view type", "ValidationException", update("refusing", spec(false, types.StreamViewTypeKeysOnly))},
		{"an unknown view type", "ValidationException", update("plain", spec(true, "EVERYTHING"))},
		{"a stream on no table", "ResourceNotFoundException", update("absent", spec(true, types.StreamViewTypeKeysOnly))},
		{"another change of a table", "ValidationException", func() error {
			_, err := e.c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("plain"), BillingMode: types.BillingModeProvisioned,
				StreamSpecification: spec(true, types.StreamViewTypeKeysOnly)})
			return err
		}()},
		{"a table without a stream still has none", "", func() error {
			out, err := e.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("plain")})
			if err == nil && (out.Table.StreamSpecification != nil || out.Table.LatestStreamArn != nil) {
				return errors.New("it has a stream")
			}
			return err
		}()},
		{"a stream ARN that is none", "ValidationException", describe("not-an-arn")},
		{"a stream the endpoint does not have", "ResourceNotFoundException", describe(tableArn + "refusing/stream/2000-01-01T00:00:00.000")},
		{"a shard the stream does not have", "ResourceNotFoundException", iterator(stypes.ShardIteratorTypeLatest, "", "shardId-00000000000000000000-00000000")},
		{"an unknown iterator type", "ValidationException", iterator("SOMEWHERE", "", shard)},
		{"AT_SEQUENCE_NUMBER without one", "ValidationException", iterator(stypes.ShardIteratorTypeAtSequenceNumber, "", shard)},
		{"TRIM_HORIZON with a sequence number", "ValidationException", iterator(stypes.ShardIteratorTypeTrimHorizon, start, shard)},
		{"a sequence number that is none", "ValidationException", iterator(stypes.ShardIteratorTypeAfterSequenceNumber, "12345678901234567890123", shard)},
		{"an iterator the endpoint did not give", "ValidationException", records(tableArn+"refusing/stream/2000-01-01T00:00:00.000|1|AAAA", 10)},
		{"a GetRecords limit over 1,000", "ValidationException", records(iteratorAt(t, e.sc, arn, stypes.ShardIteratorTypeLatest, ""), 1001)},
	} {
		if got := apiCode(c.err); got != c.want {
			t.Errorf("%s: %v, want %s", c.name, c.err, c.want)
		}
	}
}
