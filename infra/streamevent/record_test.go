package streamevent

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// TestEventAsAwsLambdaGoReadsIt: every attribute type converts as
// aws-lambda-go decodes it, and the event is the JSON that its own types
// give (userIdentity lowercased, the creation time in epoch seconds).
func TestEventAsAwsLambdaGoReadsIt(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	item := map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "S#1"}, "n": &types.AttributeValueMemberN{Value: "-1.5e3"},
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 0xfe, 0xff}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"z":  &types.AttributeValueMemberNULL{Value: true},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberS{Value: "<&>"}}},
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "1"}, &types.AttributeValueMemberBOOL{Value: false}}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
	}
	in := types.Record{AwsRegion: aws.String("us-east-1"), EventID: aws.String("e1"), EventName: types.OperationTypeRemove,
		EventSource: aws.String("aws:dynamodb"), EventVersion: aws.String("1.1"),
		UserIdentity: &types.Identity{PrincipalId: aws.String("dynamodb.amazonaws.com"), Type: aws.String("Service")},
		Dynamodb: &types.StreamRecord{ApproximateCreationDateTime: &at, SequenceNumber: aws.String("100000000000000000001"),
			SizeBytes: aws.Int64(42), StreamViewType: types.StreamViewTypeNewAndOldImages,
			Keys: map[string]types.AttributeValue{"PK": item["PK"]}, OldImage: item}}
	rec, err := Of(in, "arn:stream")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Event([]Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	var got events.DynamoDBEvent
	if err := json.Unmarshal(ev, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Records[0]
	old := r.Change.OldImage
	checks := []struct {
		name      string
		got, want any
	}{
		{"S", old["PK"].String(), "S#1"}, {"N", old["n"].Number(), "-1.5e3"}, {"B", old["b"].Binary(), []byte{0, 1, 0xfe, 0xff}},
		{"BOOL", old["t"].Boolean(), true}, {"NULL", old["z"].IsNull(), true}, {"M", old["m"].Map()["x"].String(), "<&>"},
		{"L", []any{old["l"].List()[0].Number(), old["l"].List()[1].Boolean()}, []any{"1", false}},
		{"SS", old["ss"].StringSet(), []string{"a", "b"}}, {"NS", old["ns"].NumberSet(), []string{"1", "2"}},
		{"BS", old["bs"].BinarySet(), [][]byte{{1}, {2, 3}}},
		{"keys", r.Change.Keys["PK"].String(), "S#1"}, {"no new image", r.Change.NewImage == nil, true},
		{"time", r.Change.ApproximateCreationDateTime.Unix(), at.Unix()}, {"seq", r.Change.SequenceNumber, "100000000000000000001"},
		{"size", r.Change.SizeBytes, int64(42)}, {"view", r.Change.StreamViewType, "NEW_AND_OLD_IMAGES"},
		{"identity", *r.UserIdentity, events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}},
		{"source arn", r.EventSourceArn, "arn:stream"}, {"name", r.EventName, "REMOVE"}, {"id", r.EventID, "e1"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %#v, want %#v", c.name, c.got, c.want)
		}
	}
	// aws-lambda-go's types marshal back to the same JSON.
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(ev, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the event\n%s\nis not what aws-lambda-go's types give\n%s", ev, again)
	}
}
