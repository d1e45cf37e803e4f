package streampoll

import (
	jsonv2 "encoding/json/v2"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFilterPatterns: Lambda's pattern syntax matched against a record
// as the event holds it.
func TestFilterPatterns(t *testing.T) {
	var rec map[string]any
	err := jsonv2.Unmarshal([]byte(`{"eventName":"MODIFY","dynamodb":{"Keys":{"PK":{"S":"SESSION#1"},"SK":{"S":"METADATA"}},
		"NewImage":{"tags":{"SS":["a","b"]},"n":{"N":"3"}},"SizeBytes":42}}`), &rec)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		pattern string
		want    bool
	}{
		{`{"eventName":["INSERT","MODIFY"],"dynamodb":{"Keys":{"SK":{"S":["METADATA"]}}}}`, true},
		{`{"eventName":["INSERT"]}`, false},
		{`{"dynamodb":{"Keys":{"PK":{"S":[{"prefix":"SESSION#"}]}}}}`, true},
		{`{"dynamodb":{"Keys":{"PK":{"S":[{"prefix":"TRIGGER#"}]}}}}`, false},
		{`{"dynamodb":{"Keys":{"PK":{"S":[{"suffix":"#1"}]}}}}`, true},
		{`{"eventName":[{"equals-ignore-case":"modify"}]}`, true},
		{`{"dynamodb":{"NewImage":{"n":[{"exists":true}]}}}`, true},
		{`{"dynamodb":{"NewImage":{"gone":[{"exists":true}]}}}`, false},
		{`{"dynamodb":{"OldImage":{"n":[{"exists":false}]}}}`, true},
		{`{"dynamodb":{"NewImage":{"n":[{"exists":false}]}}}`, false},
		{`{"eventName":[{"anything-but":["REMOVE"]}]}`, true},
		{`{"eventName":[{"anything-but":"MODIFY"}]}`, false},
		{`{"absent":[{"anything-but":"x"}]}`, false},
		{`{"dynamodb":{"NewImage":{"tags":{"SS":["b"]}}}}`, true},
		{`{"dynamodb":{"SizeBytes":[42]}}`, true},
		{`{"dynamodb":{"SizeBytes":[43]}}`, false},
		{`{"dynamodb":{"Keys":["METADATA"]}}`, false},
	}
	for _, c := range cases {
		fs, err := parseFilters([]string{c.pattern})
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if got := keep(fs, rec); got != c.want {
			t.Errorf("%s: %v, want %v", c.pattern, got, c.want)
		}
	}
	// Several patterns: a record is kept when one matches.
	fs, err := parseFilters([]string{`{"eventName":["INSERT"]}`, `{"eventName":["MODIFY"]}`})
	if err != nil || !keep(fs, rec) {
		t.Errorf("patterns OR: %v", err)
	}
}

// TestInvalidPatternStopsRun: a pattern Lambda would refuse is an error
// of Run, before it reads anything.
func TestInvalidPatternStopsRun(t *testing.T) {
	for _, p := range []string{`[]`, `{}`, `{"eventName":"INSERT"}`, `{"eventName":[]}`, `{"eventName":[{"prefix":1}]}`,
		`{"eventName":[{"numeric":[">",1]}]}`, `{"eventName":[{"exists":"yes"}]}`, `{"a":[{"prefix":"x","suffix":"y"}]}`, `not json`} {
		e := &env{dir: t.TempDir()}
		m := base
		m.Filters = []string{`{"eventName":["INSERT"]}`, p}
		err := e.poller(&fn{}, m).Run(t.Context())
		if err == nil || !strings.Contains(err.Error(), "filter 2") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestFiltersDropRecords: records that match no pattern are never sent,
// and the checkpoint moves past them.
func TestFiltersDropRecords(t *testing.T) {
	e := newEnv(t)
	for i, sk := range []string{"METADATA", "RUN#1", "METADATA", "RUN#2", "RUN#3"} {
		e.put(t, fmt.Sprint("S#", i), sk)
	}
	e.put(t, "S#x", "METADATA")
	e.put(t, "S#y", "RUN#4")
	all := e.streamSeqs(t)
	m := base
	m.Filters = []string{`{"eventName":["INSERT","MODIFY"],"dynamodb":{"Keys":{"SK":{"S":["METADATA"]}}}}`}
	f := &fn{}
	stop := start(t, e.poller(f, m))
	waitFor(t, "the checkpoint at the last record", func() bool {
		c, _ := readCheckpoint(filepath.Join(e.dir, "stream-checkpoint.json"))
		return c.SequenceNumber == all[len(all)-1]
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.seqs(), []string{all[0], all[2], all[5]}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if n := len(f.invocations()); n != 1 {
		t.Errorf("%d invocations, want the 3 kept records in 1", n)
	}
}
