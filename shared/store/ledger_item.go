package store

import (
	"strings"

	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Keys of a ledger row.
const (
	ledgerPrefix  = "OPERATION#"
	ledgerSortKey = "LEDGER"
)

// LedgerKey returns the primary key of a user's ledger row for a key.
func LedgerKey(userID, operationKey string) Item {
	return key(ledgerPrefix+userID+"#"+operationKey, ledgerSortKey)
}

// IsLedgerKey reports whether a primary key is a ledger row's.
func IsLedgerKey(pk, sk string) bool {
	return strings.HasPrefix(pk, ledgerPrefix) && sk == ledgerSortKey
}

// EncodeLedger returns the item of a ledger row.
func EncodeLedger(l *ledger.Row) Item {
	item := LedgerKey(l.UserID, l.OperationKey)
	item["intent"] = S(l.Intent)
	PutS(item, "orgId", l.OrgID)
	PutS(item, "botId", l.BotID)
	item["fingerprint"] = S(l.Fingerprint)
	item["status"] = S(l.Status)
	item["sessionId"] = S(l.SessionID)
	PutS(item, "sandboxId", l.SandboxID)
	PutS(item, "sandboxKind", l.SandboxKind)
	PutS(item, "sandboxProvider", l.SandboxProvider)
	PutS(item, "sandboxAllocation", l.SandboxAllocation)
	if !l.LeaseUntil.IsZero() {
		item["leaseUntil"] = N(l.LeaseUntil.UnixMilli())
	}
	item["createdAt"] = S(l.CreatedAt)
	item["expiresAt"] = N(l.ExpiresAt.Unix())
	return item
}

// InvalidLedgerError is a ledger row that does not decode.
type InvalidLedgerError struct{ Reason string }

func (e *InvalidLedgerError) Error() string { return "ledger row is invalid: " + e.Reason }

// DecodeLedger reads a ledger row. The user and the key come from the
// row's key; attributes of the wrong type make it invalid.
func DecodeLedger(item Item) (*ledger.Row, error) {
	d := &AttrReader{EmptyIsUnset: true}
	pk := d.Str(item, "", "PK")
	rest, ok := strings.CutPrefix(pk, ledgerPrefix)
	user, key, ok2 := strings.Cut(rest, "#")
	if !ok || !ok2 || user == "" || key == "" {
		return nil, &InvalidLedgerError{"the key is not a ledger key"}
	}
	l := &ledger.Row{
		UserID:            user,
		OperationKey:      key,
		Intent:            d.Str(item, "", "intent"),
		OrgID:             d.Str(item, "", "orgId"),
		BotID:             d.Str(item, "", "botId"),
		Fingerprint:       d.Str(item, "", "fingerprint"),
		Status:            d.Str(item, "", "status"),
		SessionID:         d.Str(item, "", "sessionId"),
		SandboxID:         d.Str(item, "", "sandboxId"),
		SandboxKind:       d.Str(item, "", "sandboxKind"),
		SandboxProvider:   d.Str(item, "", "sandboxProvider"),
		SandboxAllocation: d.Str(item, "", "sandboxAllocation"),
		LeaseUntil:        d.EpochMillis(item, "", "leaseUntil"),
		CreatedAt:         d.Str(item, "", "createdAt"),
	}
	if route, ok := d.Map(item, "", "sandboxRoute"); ok {
		l.Route = &session.Route{Kind: d.Str(route, "sandboxRoute.", "kind"), RouteKey: d.Str(route, "sandboxRoute.", "routeKey"), Suffix: d.Str(route, "sandboxRoute.", "suffix")}
	}
	l.ExpiresAt = d.EpochSeconds(item, "", "expiresAt")
	if l.SessionID == "" {
		d.Fail("sessionId is missing")
	}
	if d.Err() != nil {
		return nil, &InvalidLedgerError{d.Err().Error()}
	}
	return l, nil
}
