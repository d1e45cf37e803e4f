package dynamo

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkLockHeld: of what the endpoint does for one request, how much
// it does under its lock, where requests on other items wait for it: a
// PutItem and a four-item transaction on a table of 100,000 items.
// "locked" is the work under the lock alone (the request decoded before);
// "request" is the whole of it, from the body to the answer, without the
// network. A request on another item waits at most the first.
func BenchmarkLockHeld(b *testing.B) {
	db := New()
	if _, err := db.createTable(&createTableInput{TableName: "locks", BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []attributeDefinition{{"PK", "S"}, {"SK", "S"}, {"dueShard", "S"}, {"nextRunAt", "S"}},
		KeySchema:            []keySchemaElement{{"PK", "HASH"}, {"SK", "RANGE"}},
		GlobalSecondaryIndexes: []indexSpec{{IndexName: "Due", KeySchema: []keySchemaElement{{"dueShard", "HASH"}, {"nextRunAt", "RANGE"}},
			Projection: &projectionSpec{ProjectionType: "ALL"}}},
	}); err != nil {
		b.Fatal(err)
	}
	s := func(v string) value { return value{kind: kindS, s: v} }
	filler := s(strings.Repeat("x", 560))
	for i := range 100000 {
		it := item{"PK": s(fmt.Sprintf("SESSION#seed%d", i)), "SK": s("METADATA"), "filler": filler}
		if i%4 == 0 {
			it["dueShard"], it["nextRunAt"] = s(fmt.Sprintf("DUE#%d", i%16)), s(fmt.Sprintf("2026-12-01T09:%02d:00Z", i%60))
		}
		if _, _, err := db.commit(&write{op: opPut, table: "locks", put: it}); err != nil {
			b.Fatal(err)
		}
	}
	putBody := func(i int) string {
		return fmt.Sprintf(`{"TableName":"locks","Item":{"PK":{"S":"SESSION#seed%d"},"SK":{"S":"METADATA"},"filler":{"S":"%s"}},"ConditionExpression":"attribute_exists(PK)"}`,
			i%1000, filler.s)
	}
	transactBody := func(i int) string {
		put := func(pk, sk string) string {
			return fmt.Sprintf(`{"Put":{"TableName":"locks","Item":{"PK":{"S":"%s"},"SK":{"S":"%s"},"filler":{"S":"%s"}},"ConditionExpression":"attribute_not_exists(PK) OR filler = :f","ExpressionAttributeValues":{":f":{"S":"%s"}}}}`,
				pk, sk, filler.s, filler.s)
		}
		n := i % 1000
		return `{"TransactItems":[` + put(fmt.Sprintf("SESSION#new%d", n), "METADATA") + "," + put(fmt.Sprintf("OPERATION#new%d", n), "LEDGER") + "," +
			fmt.Sprintf(`{"Update":{"TableName":"locks","Key":{"PK":{"S":"SESSION#seed%d"},"SK":{"S":"METADATA"}},"UpdateExpression":"SET nextRunAt = :n","ExpressionAttributeValues":{":n":{"S":"2026-12-01T10:00:00Z"}}}}`, n*4) + "," +
			put(fmt.Sprintf("TRIGGER#t%d", n), fmt.Sprintf("RUN#%d", i)) + `]}`
	}
	bodies := func(f func(int) string) []string {
		out := make([]string, 1000)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	puts, transactions := bodies(putBody), bodies(transactBody)
	serveOne := func(b *testing.B, op, body string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		w := httptest.NewRecorder()
		db.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
	b.Run("put/request", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			serveOne(b, "PutItem", puts[i%len(puts)])
		}
	})
	b.Run("put/locked", func(b *testing.B) {
		writes := make([]*write, 1000)
		for i := range writes {
			var in putItemInput
			if err := decodeJSON([]byte(puts[i]), &in); err != nil {
				b.Fatal(err)
			}
			writes[i] = &write{op: opPut, table: in.TableName, put: in.Item}
			if err := db.single(writes[i], in.legacy, "", in.ConditionExpression, nil, in.expressions); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, _, err := db.commit(writes[i%len(writes)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("transact/request", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			serveOne(b, "TransactWriteItems", transactions[i%len(transactions)])
		}
	})
	b.Run("transact/locked", func(b *testing.B) {
		parsed := make([][]*write, len(transactions))
		for i := range parsed {
			var in transactWriteItemsInput
			if err := decodeJSON([]byte(transactions[i]), &in); err != nil {
				b.Fatal(err)
			}
			var err error
			if parsed[i], err = parseTransaction(&in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := db.commitTransaction(parsed[i%len(parsed)], "", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
