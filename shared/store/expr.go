package store

import (
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// expr gathers the attribute names and values of the condition and update
// expressions of one request, written as text on placeholders of their
// own: #name for an attribute, :name for a value. The SDK's expression
// builder does the same at several times the cost, which a burst of
// firings pays once per trigger; the queries and the owner's counters,
// written once per request of a user, keep it.
type expr struct {
	names  map[string]string
	values Item
}

// name is the placeholder of the attribute name n.
func (e *expr) name(n string) string {
	if e.names == nil {
		e.names = make(map[string]string, 8) // a firing's advance has 7
	}
	e.names["#"+n] = n
	return "#" + n
}

// value is the placeholder :p of the value v.
func (e *expr) value(p string, v types.AttributeValue) string {
	if e.values == nil {
		e.values = make(Item, 12) // a firing's advance has 11
	}
	e.values[":"+p] = v
	return ":" + p
}

// unchanged is the condition that an attribute still holds v, or, when v
// is S(""), is still unset: absent, NULL or the empty string, as the codec
// reads it; when v is nil (a number), absent or NULL. (A number is never
// compared with "": the embedded endpoint refuses that.)
func (e *expr) unchanged(name string, v types.AttributeValue) string {
	n := e.name(name)
	s, isString := v.(*types.AttributeValueMemberS)
	if v != nil && (!isString || s.Value != "") {
		return n + " = " + e.value("seen_"+name, v)
	}
	unset := "attribute_not_exists(" + n + ") OR attribute_type(" + n + ", " + e.value("typeNull", S("NULL")) + ")"
	if v == nil {
		return "(" + unset + ")"
	}
	return "(" + unset + " OR " + n + " = " + e.value("empty", v) + ")"
}

// assign is the update clause that sets the attribute to v: NULL for nil,
// which reads back as unset.
func (e *expr) assign(name string, v types.AttributeValue) string {
	if v == nil {
		v = null
	}
	return e.name(name) + " = " + e.value(name, v)
}

// nextVersion is the update clause that moves a trigger's version on, to
// 1 for an older writer's item, which has none.
func (e *expr) nextVersion() string {
	n := e.name("version")
	return n + " = if_not_exists(" + n + ", " + e.value("zero", N(0)) + ") + " + e.value("one", N(1))
}

// unchangedSince is the condition that a trigger is still as it was
// read: there, with the same active flag, next run and version (0: an
// older writer's item, which has none).
func (e *expr) unchangedSince(tr *trigger.Trigger) string {
	var seenVersion types.AttributeValue
	if tr.Version != 0 {
		seenVersion = N(tr.Version)
	}
	return and("attribute_exists(PK)", e.name("active")+" = "+e.value("seen_active", Bool(tr.Active)),
		e.unchanged("nextRunAt", S(formatTime(tr.NextRunAt))), e.unchanged("version", seenVersion))
}

// null is the NULL attribute value.
var null types.AttributeValue = &types.AttributeValueMemberNULL{Value: true}

// absentOrExpired is the condition that no item has the key, or the one
// that has it expired by at (its expiresAt, in seconds).
func (e *expr) absentOrExpired(at time.Time) string {
	return "attribute_not_exists(PK) OR " + e.name("expiresAt") + " <= " + e.value("at", N(at.Unix()))
}

// and joins conditions with AND.
func and(conds ...string) string { return strings.Join(conds, " AND ") }

// set is the update action of the clauses.
func set(clauses ...string) string { return "SET " + strings.Join(clauses, ", ") }
