package store

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
)

// Item is a DynamoDB item.
type Item = map[string]types.AttributeValue

// S, N, L, M and Bool are the attribute values of the types the table's item
// shapes use.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a number attribute.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// L is a list attribute of strings.
func L(v []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(v))
	for i, s := range v {
		l[i] = S(s)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// M is a map attribute.
func M(v Item) types.AttributeValue { return &types.AttributeValueMemberM{Value: v} }

// Bool is a boolean attribute.
func Bool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// PutS sets a string attribute, or leaves it out when v is empty.
func PutS(item Item, name, v string) {
	if v != "" {
		item[name] = S(v)
	}
}

// AttrReader reads the attributes of a stored item strictly. It is the one
// way every kind of item in the table is read: sessions, ledger rows,
// triggers and runs. An attribute is read by its exact name (one whose
// name differs in case is another attribute, ignored as unknown ones are);
// an absent or NULL attribute is unset, and so is an empty string read as
// a string; a value of another type is a failure that names the
// attribute's path (path, then name: "metadata.agent.model"), never its
// value. It keeps the first failure.
type AttrReader struct {
	// EmptyIsUnset reads an empty string as unset where a number or a map
	// is expected too: the contract's rule for session records, which the
	// ledger rows follow. Without it, only a string may be empty.
	EmptyIsUnset bool
	err          error
}

// Err is the first failure, or nil.
func (r *AttrReader) Err() error { return r.err }

// Fail records a failure, unless one came first. Its text names
// attributes, never their values.
func (r *AttrReader) Fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// unset reports whether v counts as unset where a value of another type
// than a string is expected.
func (r *AttrReader) unset(v types.AttributeValue) bool {
	switch v := v.(type) {
	case nil, *types.AttributeValueMemberNULL:
		return true
	case *types.AttributeValueMemberS:
		return r.EmptyIsUnset && v.Value == ""
	}
	return false
}

// Str reads a string attribute; "" when unset.
func (r *AttrReader) Str(item Item, path, name string) string {
	switch v := item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	}
	r.Fail("%s%s is not a string", path, name)
	return ""
}

// Num reads a number attribute as its text; ok is false when it is unset.
func (r *AttrReader) Num(item Item, path, name string) (v string, ok bool) {
	if n, isN := item[name].(*types.AttributeValueMemberN); isN {
		return n.Value, true
	}
	if !r.unset(item[name]) {
		r.Fail("%s%s is not a number", path, name)
	}
	return "", false
}

// Int reads a number attribute that is a whole number in 64 bits; 0 when
// it is unset.
func (r *AttrReader) Int(item Item, path, name string) int64 {
	v, ok := r.Num(item, path, name)
	if !ok {
		return 0
	}
	i, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.Fail("%s%s is not an integer", path, name)
	}
	return i
}

// Bool reads a boolean attribute; false when it is unset.
func (r *AttrReader) Bool(item Item, path, name string) bool {
	if b, ok := item[name].(*types.AttributeValueMemberBOOL); ok {
		return b.Value
	}
	if !r.unset(item[name]) {
		r.Fail("%s%s is not a boolean", path, name)
	}
	return false
}

// Map reads a map attribute; ok is false when it is unset.
func (r *AttrReader) Map(item Item, path, name string) (m Item, ok bool) {
	if v, isM := item[name].(*types.AttributeValueMemberM); isM {
		return v.Value, true
	}
	if !r.unset(item[name]) {
		r.Fail("%s%s is not a map", path, name)
	}
	return nil, false
}

// Strings reads a list attribute of strings; ok is false when it is
// unset. An empty list is a list (ok, and not nil).
func (r *AttrReader) Strings(item Item, path, name string) (v []string, ok bool) {
	l, isL := item[name].(*types.AttributeValueMemberL)
	if !isL {
		if !r.unset(item[name]) {
			r.Fail("%s%s is not a list", path, name)
		}
		return nil, false
	}
	v = make([]string, 0, len(l.Value))
	for i, e := range l.Value {
		s, isS := e.(*types.AttributeValueMemberS)
		if !isS {
			r.Fail("%s%s[%d] is not a string", path, name, i)
			return nil, false
		}
		v = append(v, s.Value)
	}
	return v, true
}

// Bytes reads a binary attribute; nil when it is unset.
func (r *AttrReader) Bytes(item Item, path, name string) []byte {
	if b, ok := item[name].(*types.AttributeValueMemberB); ok {
		return b.Value
	}
	if !r.unset(item[name]) {
		r.Fail("%s%s is not binary", path, name)
	}
	return nil
}

// EpochMillis reads a time in epoch milliseconds, between the years 1 and
// 9999; zero when it is unset.
func (r *AttrReader) EpochMillis(item Item, path, name string) time.Time {
	v, ok := r.Num(item, path, name)
	if !ok {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	t := time.UnixMilli(ms).UTC()
	if err != nil || t.Year() < 1 || t.Year() > 9999 {
		r.Fail("%s%s is not a time in epoch milliseconds", path, name)
		return time.Time{}
	}
	return t
}

// EpochSeconds reads a time in epoch seconds, as the table's TTL attribute
// holds it; zero when it is unset.
func (r *AttrReader) EpochSeconds(item Item, path, name string) time.Time {
	v, ok := r.Num(item, path, name)
	if !ok {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.Fail("%s%s is not a time in epoch seconds", path, name)
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// Time reads a string attribute that holds a time in layout; zero when it
// is unset.
func (r *AttrReader) Time(item Item, path, name, layout string) time.Time {
	s := r.Str(item, path, name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		r.Fail("%s%s is not a time", path, name)
	}
	return t
}

// Repository reads a repository's map (type, repo, url, branch) under
// path.
func (r *AttrReader) Repository(m Item, path string) session.Repository {
	return session.Repository{Type: r.Str(m, path, "type"), Repo: r.Str(m, path, "repo"), URL: r.Str(m, path, "url"), Branch: r.Str(m, path, "branch")}
}

// Agent reads an agent's map (mode, model, variant) under path.
func (r *AttrReader) Agent(m Item, path string) session.Agent {
	return session.Agent{Mode: r.Str(m, path, "mode"), Model: r.Str(m, path, "model"), Variant: r.Str(m, path, "variant")}
}
