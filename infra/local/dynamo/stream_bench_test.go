package dynamo

import (
	"strconv"
	"testing"
)

// BenchmarkStreamedPut: what a table's stream adds to a write, under the
// lock: a put that changes an item of a table without a stream, then of
// one with a NEW_AND_OLD_IMAGES stream (its records kept up to the cap).
func BenchmarkStreamedPut(b *testing.B) {
	for _, view := range []string{"", "NEW_AND_OLD_IMAGES"} {
		name := "without"
		if view != "" {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			db := New()
			in := &createTableInput{TableName: "streamed", BillingMode: "PAY_PER_REQUEST",
				AttributeDefinitions: []attributeDefinition{{"PK", "S"}, {"SK", "S"}}, KeySchema: []keySchemaElement{{"PK", "HASH"}, {"SK", "RANGE"}}}
			if view != "" {
				in.StreamSpecification = &streamSpecification{StreamEnabled: new(true), StreamViewType: view}
			}
			if _, err := db.createTable(in); err != nil {
				b.Fatal(err)
			}
			writes := make([]*write, 1000)
			for i := range writes {
				s := func(v string) value { return value{kind: kindS, s: v} }
				writes[i] = &write{op: opPut, table: "streamed", put: item{"PK": s("SESSION#" + strconv.Itoa(i%100)), "SK": s("METADATA"), "n": s(strconv.Itoa(i))}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, _, err := db.commit(writes[i%len(writes)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
