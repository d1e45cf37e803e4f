package streamevent

import (
	"slices"
	"testing"
)

// TestItemFailuresRules: Lambda's documented reading of the answer: the
// records listed, none, or (why) the whole batch.
func TestItemFailuresRules(t *testing.T) {
	batch := []Record{{Seq: "11"}, {Seq: "12"}, {Seq: "13"}}
	cases := []struct {
		answer string
		want   []int
		whole  bool
	}{
		{``, nil, false}, {`null`, nil, false}, {`{}`, nil, false}, {`{"batchItemFailures":null}`, nil, false},
		{`{"batchItemFailures":[]}`, nil, false}, {`{"other":1}`, nil, false},
		{`{"batchItemFailures":[{"itemIdentifier":"13"},{"itemIdentifier":"12"}]}`, []int{2, 1}, false},
		{`{"batchItemFailures":[{"itemIdentifier":"11"}]}`, []int{0}, false},
		{`{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, true},
		{`{"batchItemFailures":[{"itemIdentifier":null}]}`, nil, true},
		{`{"batchItemFailures":[{"itemIdentifer":"12"}]}`, nil, true},
		{`{"batchItemFailures":[{"itemIdentifier":"12"},{"itemIdentifier":"99"}]}`, nil, true},
		{`{"batchItemFailures":[{"itemIdentifier":12}]}`, nil, true},
		{`{"batchItemFailures":"12"}`, nil, true},
		{`"ok"`, nil, true},
	}
	for _, c := range cases {
		got, why := ItemFailures([]byte(c.answer), batch)
		if !slices.Equal(got, c.want) || (why != "") != c.whole {
			t.Errorf("%s: %v (%q), want %v, whole batch %v", c.answer, got, why, c.want, c.whole)
		}
	}
}
