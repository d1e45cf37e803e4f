package dynamo_test

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
)

// TestStreamFidelity holds DynamoDB Streams' documented answers, one case
// each, through the SDK's dynamodb and dynamodbstreams clients: on the
// embedded endpoint and, when moto_server is installed, on moto (skipped,
// saying why, where it is not). Where moto answers otherwise, the case's
// moto note says how, and on moto the test checks that it still does, so
// that the note stays true; the documentation wins. (What moto does not
// do at all, the time to live's deletions and iterators that expire or
// meet trimmed records, the embedded endpoint's own tests hold.)
func TestStreamFidelity(t *testing.T) {
	cases := streamFidelityCases()
	t.Run("embedded", func(t *testing.T) { runStreamFidelity(t, embeddedURL(t), false, cases) })
	t.Run("moto", func(t *testing.T) { runStreamFidelity(t, motoserver.URL(t), true, cases) })
}

// streamCase is a documented behaviour of DynamoDB Streams: calls on a
// table of the case's own, with a stream of view type view, and what they
// answer, a line each.
type streamCase struct {
	name, doc string
	view      types.StreamViewType
	run       func(f *streamFixture) []string
	want      []string
	// moto, when set, is how moto differs: the note, and its lines.
	moto *streamMoto
}

type streamMoto struct {
	note string
	want []string
}

// streamFixture is a case's table on a backend, and its clients.
type streamFixture struct {
	t     *testing.T
	ctx   context.Context
	c     *dynamodb.Client
	sc    *dynamodbstreams.Client
	table string
	arn   string // the stream's ARN, as CreateTable answered it
	// created is CreateTable's answer.
	created *types.TableDescription
}

var streamTables atomic.Int64

func runStreamFidelity(t *testing.T, url string, moto bool, cases []streamCase) {
	// No retries: moto answers some requests with HTTP 500.
	c := localdb.Client(url, func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	sc := streamsClient(c, func(o *dynamodbstreams.Options) { o.Retryer = aws.NopRetryer{} })
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			f := &streamFixture{t: t, ctx: context.Background(), c: c, sc: sc, table: fmt.Sprintf("stream-fidelity-%d", streamTables.Add(1))}
			f.create(k.view)
			got := k.run(f)
			differ := func(want []string) string {
				if slices.Equal(got, want) {
					return ""
				}
				return fmt.Sprintf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
			switch {
			case moto && k.moto != nil && differ(k.want) == "":
				t.Errorf("moto now gives DynamoDB's documented answer; remove the case's moto note (%s)", k.moto.note)
			case moto && k.moto != nil && differ(k.moto.want) != "":
				t.Errorf("moto no longer differs as noted (%s): %s", k.moto.note, differ(k.moto.want))
			case moto && k.moto != nil:
				t.Logf("moto differs, as noted: %s", k.moto.note)
			case differ(k.want) != "":
				t.Errorf("%s\ndoc: %s", differ(k.want), k.doc)
			}
		})
	}
}

// create makes the case's table, of keys PK and SK, with a stream of view
// type view ("": none), and deletes it when the test ends.
func (f *streamFixture) create(view types.StreamViewType) {
	f.t.Helper()
	out, err := f.c.CreateTable(f.ctx, streamTableInput(f.table, view))
	if err != nil {
		f.t.Fatal(err)
	}
	f.created, f.arn = out.TableDescription, aws.ToString(out.TableDescription.LatestStreamArn)
	f.t.Cleanup(func() {
		_, _ = f.c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(f.table)})
	})
}

// must fails the case on an error.
func (f *streamFixture) must(_ any, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// put puts the item of partition "p", sort key sk, with string attributes
// (name, value pairs).
func (f *streamFixture) put(sk string, attrs ...string) {
	f.t.Helper()
	f.must(f.c.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: av(append([]string{"PK", "p", "SK", sk}, attrs...)...)}))
}

// set updates the item of sort key sk: SET name = value.
func (f *streamFixture) set(sk, name, value string) {
	f.t.Helper()
	f.must(f.c.UpdateItem(f.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.table), Key: av("PK", "p", "SK", sk),
		UpdateExpression: aws.String("SET #n = :v"), ExpressionAttributeNames: map[string]string{"#n": name}, ExpressionAttributeValues: av(":v", value)}))
}

// del deletes the item of sort key sk.
func (f *streamFixture) del(sk string) {
	f.t.Helper()
	f.must(f.c.DeleteItem(f.ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.table), Key: av("PK", "p", "SK", sk)}))
}

// shard is the stream's one shard.
func (f *streamFixture) shard() stypes.Shard {
	f.t.Helper()
	out, err := f.sc.DescribeStream(f.ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(f.arn)})
	if err != nil {
		f.t.Fatal(err)
	}
	if len(out.StreamDescription.Shards) != 1 {
		f.t.Fatalf("%d shards", len(out.StreamDescription.Shards))
	}
	return out.StreamDescription.Shards[0]
}

// iterator is an iterator of the shard of type typ (at seq, for the types
// that take one).
func (f *streamFixture) iterator(typ stypes.ShardIteratorType, seq string) string {
	f.t.Helper()
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(f.arn), ShardId: f.shard().ShardId, ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := f.sc.GetShardIterator(f.ctx, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return aws.ToString(out.ShardIterator)
}

// records reads the shard from an iterator to what is there.
func (f *streamFixture) records(it string) []stypes.Record {
	f.t.Helper()
	recs, _ := readAll(f.t, f.sc, it, 1000)
	return recs
}

// lines renders records, a line each: the event, the sort key, and the
// images the record holds.
func lines(recs []stypes.Record) []string {
	out := []string{}
	for _, r := range recs {
		sk, _ := r.Dynamodb.Keys["SK"].(*stypes.AttributeValueMemberS)
		line := string(r.EventName) + " " + sk.Value
		if r.Dynamodb.OldImage != nil {
			line += " old=" + image(r.Dynamodb.OldImage)
		}
		if r.Dynamodb.NewImage != nil {
			line += " new=" + image(r.Dynamodb.NewImage)
		}
		out = append(out, line)
	}
	return out
}

// image renders an image of string attributes: {name:value,...}, by name.
func image(m map[string]stypes.AttributeValue) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		v := fmt.Sprint(m[n])
		if s, ok := m[n].(*stypes.AttributeValueMemberS); ok {
			v = s.Value
		}
		parts[i] = n + ":" + v
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// members renders what every record holds besides its change: the event's
// version, source and region, the view type, whether the sequence numbers
// are decimal and increase, and whether a size is given.
func members(recs []stypes.Record) []string {
	out := []string{}
	prev := new(big.Int)
	for _, r := range recs {
		n, ok := new(big.Int).SetString(aws.ToString(r.Dynamodb.SequenceNumber), 10)
		increasing := ok && n.Cmp(prev) > 0
		if ok {
			prev = n
		}
		out = append(out, fmt.Sprintf("version %s, source %s, region %s, view %s, increasing %v, sized %v, dated %v",
			aws.ToString(r.EventVersion), aws.ToString(r.EventSource), aws.ToString(r.AwsRegion), r.Dynamodb.StreamViewType,
			increasing, aws.ToInt64(r.Dynamodb.SizeBytes) > 0, r.Dynamodb.ApproximateCreationDateTime != nil))
	}
	return out
}
