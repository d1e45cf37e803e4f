package dynamo

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// firingTriggers is the number of due triggers the firing's requests meet:
// the held-out burst of 2,000, 125 in each of the 16 shards.
const firingTriggers = 2000

// firingRequest is one request as the SDK sends it: its operation and body.
type firingRequest struct {
	op   string
	body []byte
}

// firingSetup are the requests that make the table the firing meets: the
// template's definition, holding firingTriggers triggers, as the API
// writes them, spread over the shards.
func firingSetup() []firingRequest {
	reqs := []firingRequest{{"CreateTable", []byte(`{"TableName":"sessions","BillingMode":"PAY_PER_REQUEST",` +
		`"AttributeDefinitions":[{"AttributeName":"PK","AttributeType":"S"},{"AttributeName":"SK","AttributeType":"S"},{"AttributeName":"ownerUserId","AttributeType":"S"},` +
		`{"AttributeName":"listedAt","AttributeType":"S"},{"AttributeName":"dueShard","AttributeType":"S"},{"AttributeName":"nextRunAt","AttributeType":"S"}],` +
		`"KeySchema":[{"AttributeName":"PK","KeyType":"HASH"},{"AttributeName":"SK","KeyType":"RANGE"}],"GlobalSecondaryIndexes":[` +
		`{"IndexName":"TriggersByUser","KeySchema":[{"AttributeName":"ownerUserId","KeyType":"HASH"},{"AttributeName":"listedAt","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}},` +
		`{"IndexName":"DueTriggersAll","KeySchema":[{"AttributeName":"dueShard","KeyType":"HASH"},{"AttributeName":"nextRunAt","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}]}`)}}
	for i := range firingTriggers {
		reqs = append(reqs, firingRequest{"PutItem", fmt.Appendf(nil, `{"TableName":"sessions","Item":{"PK":{"S":"TRIGGER#trg_%[1]d"},"SK":{"S":"TRIGGER"},"active":{"BOOL":true},`+
			`"agent":{"M":{"mode":{"S":"code"},"model":{"S":"anthropic/claude"}}},"createdAt":{"S":"2026-11-30T10:00:00Z"},"cron":{"S":"* * * * *"},`+
			`"dueShard":{"S":"DUE#%[2]d"},"listedAt":{"S":"2026-11-30T10:00:00.%09[1]dZ"},"nextRunAt":{"S":"%[4]s"},"ownerUserId":{"S":"u%[3]d"},`+
			`"prompt":{"S":"Triage new issues."},"repository":{"M":{"repo":{"S":"acme/app"},"type":{"S":"github"}}},"timezone":{"S":"UTC"},`+
			`"triggerId":{"S":"trg_%[1]d"},"version":{"N":"1"}}}`, i, i%16, i/100, firstSlot.Format(time.RFC3339))})
	}
	return reqs
}

// firingTable is a DB holding the table of firingSetup.
func firingTable(b *testing.B) *DB {
	b.Helper()
	db := New()
	for _, r := range firingSetup() {
		serveFiring(b, db, sdkHeader(r.op), r.body)
	}
	return db
}

// firstSlot is every trigger's first due slot.
var firstSlot = time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC)

// firedBody is the transaction that fires trigger n for the round-th
// time, as the SDK sends it: the session, its ledger row on the condition
// that none is live, the trigger's update on the condition that it is as
// the index showed it, and its run.
func firedBody(n, round int) string {
	id := fmt.Sprintf("%d_%d", n, round)
	minute := func(r int) string { return firstSlot.Add(time.Duration(r) * time.Minute).Format(time.RFC3339) }
	slot, next := minute(round), minute(round+1)
	return `{"ClientRequestToken":"token-` + id + `","TransactItems":[` +
		`{"Put":{"ConditionExpression":"attribute_not_exists(PK)","Item":{"PK":{"S":"SESSION#workspace_` + id + `"},"SK":{"S":"METADATA"},"metadataSchemaVersion":{"N":"2"},` +
		`"metadata":{"M":{"workspace":{"M":{"sandboxId":{"S":"sbx-c5f19d4bdbb1ed901cb38622c8131810b7413db1d03f1334"},"sandboxKind":{"S":"isolated"},"sandboxProvider":{"S":"cloudflare-containers"},"sandboxAllocation":{"S":"cloudflare-containers-standard-4"}}},` +
		`"lifecycle":{"M":{"version":{"N":"1"},"timestamp":{"N":"1796218697882"}}},"repository":{"M":{"type":{"S":"github"},"repo":{"S":"acme/app"}}},"agent":{"M":{"mode":{"S":"code"},"model":{"S":"anthropic/claude"}}},` +
		`"identity":{"M":{"sessionId":{"S":"workspace_` + id + `"},"userId":{"S":"u1"},"createdOnPlatform":{"S":"scheduled"}}}}}},"TableName":"sessions"}},` +
		`{"Put":{"ConditionExpression":"(attribute_not_exists (#0)) OR (#1 <= :0)","ExpressionAttributeNames":{"#0":"PK","#1":"expiresAt"},"ExpressionAttributeValues":{":0":{"N":"1796218697"}},` +
		`"Item":{"expiresAt":{"N":"1796305097"},"PK":{"S":"OPERATION#u1#trigger:trg_` + id + `"},"intent":{"S":"create_session"},"fingerprint":{"S":"2760acd33655089b860b2aac46c473d11328ba5004000ae0d2be01cce6cce9e5"},` +
		`"status":{"S":"completed"},"sessionId":{"S":"workspace_` + id + `"},"sandboxKind":{"S":"isolated"},"sandboxProvider":{"S":"cloudflare-containers"},"createdAt":{"S":"2026-12-02T13:38:17Z"},"SK":{"S":"LEDGER"},` +
		`"sandboxId":{"S":"sbx-c5f19d4bdbb1ed901cb38622c8131810b7413db1d03f1334"},"sandboxAllocation":{"S":"cloudflare-containers-standard-4"}},"ReturnValuesOnConditionCheckFailure":"ALL_OLD","TableName":"sessions"}},` +
		`{"Update":{"ConditionExpression":"(((attribute_exists (#0)) AND (#1 = :0)) AND (#2 = :1)) AND (#3 = :2)",` +
		`"ExpressionAttributeNames":{"#2":"nextRunAt","#3":"version","#4":"lastRunAt","#5":"lastSessionId","#6":"lastRunStatus","#7":"lastError","#0":"PK","#1":"active"},` +
		`"ExpressionAttributeValues":{":0":{"BOOL":true},":4":{"N":"0"},":6":{"S":"` + slot + `"},":7":{"S":"workspace_` + id + `"},":9":{"NULL":true},":1":{"S":"` + slot + `"},` +
		fmt.Sprintf(`":2":{"N":"%d"},":3":{"S":"%s"},":5":{"N":"1"},":8":{"S":"fired"}},`, round+1, next) +
		fmt.Sprintf(`"Key":{"PK":{"S":"TRIGGER#trg_%d"},"SK":{"S":"TRIGGER"}},`, n) +
		`"TableName":"sessions","UpdateExpression":"SET #2 = :3, #3 = if_not_exists(#3, :4) + :5, #4 = :6, #5 = :7, #6 = :8, #7 = :9\n"}},` +
		`{"Put":{"Item":{"recordedAt":{"S":"` + slot + `"},"expiresAt":{"N":"1798624860"},` + fmt.Sprintf(`"PK":{"S":"TRIGGER#trg_%d"},"SK":{"S":"RUN#%s"},"triggerId":{"S":"trg_%d"},`, n, slot, n) +
		`"slot":{"S":"` + slot + `"},"status":{"S":"fired"},"sessionId":{"S":"workspace_` + id + `"}},"TableName":"sessions"}}]}`
}

// shardQuery is the firing's query of one shard of the due index.
func shardQuery(shard int) string {
	return fmt.Sprintf(`{"ExpressionAttributeNames":{"#0":"dueShard","#1":"nextRunAt"},"ExpressionAttributeValues":{":0":{"S":"DUE#%d"},":1":{"S":"2026-12-31T00:00:00Z"}},`+
		`"IndexName":"DueTriggersAll","KeyConditionExpression":"(#0 = :0) AND (#1 <= :1)","TableName":"sessions"}`, shard)
}

// discard is a ResponseWriter that keeps the status alone.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(status int)      { d.status = status }

// sdkHeader is the header the SDK sends with an operation's request.
func sdkHeader(op string) http.Header {
	return http.Header{
		"Accept-Encoding": {"identity"}, "Amz-Sdk-Request": {"attempt=1; max=4"}, "Content-Type": {"application/x-amz-json-1.0"},
		"Authorization": {"AWS4-HMAC-SHA256 Credential=local/20261202/us-east-1/dynamodb/aws4_request, SignedHeaders=accept-encoding;amz-sdk-invocation-id;amz-sdk-request;content-length;content-type;host;x-amz-date;x-amz-target, Signature=53b46909ac018e2418f38a4f235f009fdd22c3139be775beb4e7accaffff3d60"},
		"User-Agent":    {"aws-sdk-go-v2/1.48.0 ua/2.1 os/linux lang/go#1.27.3 md/GOOS#linux md/GOARCH#amd64 api/dynamodb#1.74.0 m/E,e"},
		"X-Amz-Date":    {"20261202T133817Z"}, "X-Amz-Target": {"DynamoDB_20120810." + op},
	}
}

// serveFiring answers one request through the endpoint's handler, with
// the SDK's header h.
func serveFiring(b *testing.B, db *DB, h http.Header, body []byte) {
	r := &http.Request{Method: http.MethodPost, Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
	w := &discard{h: http.Header{}}
	db.ServeHTTP(w, r)
	if w.status != http.StatusOK {
		b.Fatalf("%s: %d", h.Get("X-Amz-Target"), w.status)
	}
}

// BenchmarkFiredRequests: what the endpoint's handler spends on the
// requests of the firing, as the SDK sends them (body and headers), from
// the request to its answer, without the network, on a table of 2,000 due
// triggers: one fired trigger's transaction ("transaction"), one shard's
// query of the due index (125 triggers, "query"), and one fired trigger's
// share of a burst ("fired": its transaction and a 125th of a shard's
// query), which benchtable sets against BenchmarkNext. Every transaction
// fires another trigger, or the same one a minute later, and succeeds.
func BenchmarkFiredRequests(b *testing.B) {
	db := firingTable(b)
	fired := 0 // the transactions so far: the next fires trigger fired%firingTriggers
	transactions := func(n int) [][]byte {
		bodies := make([][]byte, n)
		for i := range bodies {
			bodies[i] = []byte(firedBody((fired+i)%firingTriggers, (fired+i)/firingTriggers))
		}
		fired += n
		return bodies
	}
	queries := make([][]byte, 16)
	for i := range queries {
		queries[i] = []byte(shardQuery(i))
	}
	transact, query := sdkHeader("TransactWriteItems"), sdkHeader("Query")
	serve := func(b *testing.B, h http.Header, body []byte) { serveFiring(b, db, h, body) }
	b.Run("transaction", func(b *testing.B) {
		bodies := transactions(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			serve(b, transact, bodies[i])
		}
	})
	b.Run("query", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			serve(b, query, queries[i%len(queries)])
		}
	})
	b.Run("fired", func(b *testing.B) {
		bodies := transactions(b.N)
		const perShard = firingTriggers / 16
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			serve(b, transact, bodies[i])
			if i%perShard == 0 {
				serve(b, query, queries[i/perShard%len(queries)])
			}
		}
	})
}
