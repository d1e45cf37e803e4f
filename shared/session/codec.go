package session

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/allocation"
)

// Item is a DynamoDB item.
type Item = map[string]types.AttributeValue

// Keys of a session item.
const (
	keyPrefix = "SESSION#"
	sortKey   = "METADATA"
)

// Key returns the primary key of a session's item.
func Key(sessionID string) Item {
	return Item{"PK": s(keyPrefix + sessionID), "SK": s(sortKey)}
}

// InvalidRecordError is a stored session that does not decode, with its
// owner when that could still be read, so that the owner can be told.
type InvalidRecordError struct {
	SessionID string
	Reason    string
	// UserID and OrgID are the owner's, when they could be read; UserID is
	// "" otherwise.
	UserID, OrgID string
}

func (e *InvalidRecordError) Error() string {
	return "session record " + e.SessionID + " is invalid: " + e.Reason
}

// Encode returns the version 2 item of a record, as the current writer
// stores it: the provider and the kind always, a named allocation by name,
// a byoc allocation as its request.
func Encode(r *Record) Item {
	identity := Item{"sessionId": s(r.SessionID), "userId": s(r.UserID)}
	putS(identity, "orgId", r.OrgID)
	putS(identity, "botId", r.BotID)
	putS(identity, "createdOnPlatform", r.CreatedOnPlatform)

	ws := Item{}
	putS(ws, "sandboxId", r.Sandbox.ID)
	putS(ws, "sandboxKind", string(r.Sandbox.Kind))
	putS(ws, "sandboxProvider", string(r.Sandbox.Provider))
	if a := r.Sandbox.Allocation; !a.IsZero() {
		if a.BYOC() {
			ws["sandboxAllocationRequest"] = encodeRequest(a.Request())
		} else {
			ws["sandboxAllocation"] = s(a.Name())
		}
	}

	metadata := Item{
		"identity":  m(identity),
		"workspace": m(ws),
		"lifecycle": m(Item{"version": n(1), "timestamp": n(r.CreatedAt.UnixMilli())}),
	}
	if rep := r.Repository; rep != (Repository{}) {
		sec := Item{}
		putS(sec, "type", rep.Type)
		putS(sec, "repo", rep.Repo)
		putS(sec, "url", rep.URL)
		putS(sec, "branch", rep.Branch)
		metadata["repository"] = m(sec)
	}
	if ag := r.Agent; ag != (Agent{}) {
		sec := Item{}
		putS(sec, "mode", ag.Mode)
		putS(sec, "model", ag.Model)
		putS(sec, "variant", ag.Variant)
		metadata["agent"] = m(sec)
	}
	item := Key(r.SessionID)
	item["metadataSchemaVersion"] = n(2)
	item["metadata"] = m(metadata)
	return item
}

func encodeRequest(r allocation.Request) types.AttributeValue {
	return m(Item{
		"provider":     m(Item{"id": s(string(r.Provider.ID)), "account": s(r.Provider.Account)}),
		"instanceType": s(r.InstanceType),
	})
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func m(v Item) types.AttributeValue { return &types.AttributeValueMemberM{Value: v} }

func putS(item Item, name, v string) {
	if v != "" {
		item[name] = s(v)
	}
}

// Decode reads a session item of any shape the table holds. A record that
// does not validate is an *InvalidRecordError; unknown attributes and
// sections are ignored; absent, NULL and empty-string attributes are unset.
func Decode(item Item) (*Record, error) {
	d := &decoder{}
	pk := d.str(item, "", "PK")
	id, ok := strings.CutPrefix(pk, keyPrefix)
	if !ok || id == "" {
		return nil, &InvalidRecordError{SessionID: pk, Reason: "the key is not a session key"}
	}
	r := &Record{SessionID: id}
	version, hasVersion := d.num(item, "", "metadataSchemaVersion")
	metadata, hasMetadata := d.mapAttr(item, "", "metadata")
	switch {
	case d.err != nil:
	case hasVersion && hasMetadata && isTwo(version):
		r.SchemaVersion = 2
		d.version2(r, metadata)
	case !hasVersion && !hasMetadata:
		r.SchemaVersion = 1
		d.version1(r, item)
	default:
		d.fail("metadataSchemaVersion and metadata are neither version 2 nor both absent")
	}
	d.sandbox(r)
	if d.err != nil {
		e := &InvalidRecordError{SessionID: id, Reason: d.err.Error()}
		e.UserID, e.OrgID = ownerHint(item)
		return nil, e
	}
	return r, nil
}

// ownerHint reads the owner of a record that does not decode: from
// metadata.identity when metadata is a map, from the top level when there
// is no metadata (the flat shape), and not at all when metadata is of
// another type. userID is "" when the owner cannot be read whole.
func ownerHint(item Item) (userID, orgID string) {
	d := &decoder{}
	from := item
	md, hasMetadata := d.mapAttr(item, "", "metadata")
	switch {
	case d.err != nil:
		return "", ""
	case hasMetadata:
		from, _ = d.mapAttr(md, "", "identity")
	}
	userID, orgID = d.str(from, "", "userId"), d.str(from, "", "orgId")
	if d.err != nil {
		return "", ""
	}
	return userID, orgID
}

func isTwo(v string) bool {
	x, ok := new(big.Rat).SetString(v)
	return ok && x.Cmp(big.NewRat(2, 1)) == 0
}

// decoder reads attributes and keeps the first failure.
type decoder struct {
	err error
	// the raw workspace attributes, checked together by sandbox.
	allocName string
	allocReq  Item
	hasReq    bool
	provider  string
	kind      string
	route     Item
	hasRoute  bool
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// str reads a string attribute; "" when unset.
func (d *decoder) str(item Item, path, name string) string {
	switch v := item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	}
	d.fail("%s%s is not a string", path, name)
	return ""
}

// num reads a number attribute as its text.
func (d *decoder) num(item Item, path, name string) (string, bool) {
	switch v := item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return "", false
	case *types.AttributeValueMemberS:
		if v.Value == "" {
			return "", false
		}
	case *types.AttributeValueMemberN:
		return v.Value, true
	}
	d.fail("%s%s is not a number", path, name)
	return "", false
}

// mapAttr reads a map attribute.
func (d *decoder) mapAttr(item Item, path, name string) (Item, bool) {
	switch v := item[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return nil, false
	case *types.AttributeValueMemberS:
		if v.Value == "" {
			return nil, false
		}
	case *types.AttributeValueMemberM:
		return v.Value, true
	}
	d.fail("%s%s is not a map", path, name)
	return nil, false
}

// epochMillis reads a timestamp in epoch milliseconds.
func (d *decoder) epochMillis(item Item, path, name string) time.Time {
	v, ok := d.num(item, path, name)
	if !ok {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	t := time.UnixMilli(ms).UTC()
	if err != nil || t.Year() < 1 || t.Year() > 9999 {
		d.fail("%s%s is not a time in epoch milliseconds", path, name)
		return time.Time{}
	}
	return t
}

func (d *decoder) owner(r *Record, item Item, path string) {
	r.UserID = d.str(item, path, "userId")
	r.OrgID = d.str(item, path, "orgId")
	r.BotID = d.str(item, path, "botId")
	if r.UserID == "" {
		d.fail("%suserId is missing", path)
	}
	if inner := d.str(item, path, "sessionId"); inner != "" && inner != r.SessionID {
		d.fail("%ssessionId differs from the key's", path)
	}
}

func (d *decoder) version2(r *Record, md Item) {
	identity, _ := d.mapAttr(md, "metadata.", "identity")
	d.owner(r, identity, "metadata.identity.")
	r.CreatedOnPlatform = d.str(identity, "metadata.identity.", "createdOnPlatform")

	if rep, ok := d.mapAttr(md, "metadata.", "repository"); ok {
		const p = "metadata.repository."
		r.Repository = Repository{d.str(rep, p, "type"), d.str(rep, p, "repo"), d.str(rep, p, "url"), d.str(rep, p, "branch")}
	}
	if ag, ok := d.mapAttr(md, "metadata.", "agent"); ok {
		const p = "metadata.agent."
		r.Agent = Agent{d.str(ag, p, "mode"), d.str(ag, p, "model"), d.str(ag, p, "variant")}
	}
	lc, _ := d.mapAttr(md, "metadata.", "lifecycle")
	d.num(lc, "metadata.lifecycle.", "version")
	r.CreatedAt = d.epochMillis(lc, "metadata.lifecycle.", "timestamp")

	ws, _ := d.mapAttr(md, "metadata.", "workspace")
	const p = "metadata.workspace."
	r.Sandbox.ID = d.str(ws, p, "sandboxId")
	d.kind = d.str(ws, p, "sandboxKind")
	d.provider = d.str(ws, p, "sandboxProvider")
	d.allocName = d.str(ws, p, "sandboxAllocation")
	d.allocReq, d.hasReq = d.mapAttr(ws, p, "sandboxAllocationRequest")
	d.route, d.hasRoute = d.mapAttr(ws, p, "sandboxRoute")
}

func (d *decoder) version1(r *Record, item Item) {
	d.owner(r, item, "")
	repo, url := d.str(item, "", "githubRepo"), d.str(item, "", "gitUrl")
	switch {
	case repo != "":
		r.Repository = Repository{Type: "github", Repo: repo}
	case url != "":
		r.Repository = Repository{Type: "git", URL: url}
	}
	r.Repository.Branch = d.str(item, "", "branchName")
	r.CreatedOnPlatform = d.str(item, "", "platform")
	r.Agent = Agent{Mode: d.str(item, "", "mode"), Model: d.str(item, "", "model")}
	d.num(item, "", "version")
	r.CreatedAt = d.epochMillis(item, "", "timestamp")
	r.Sandbox.ID = d.str(item, "", "sandboxId")
}

// sandbox validates the stored kind, provider, allocation and route
// together.
func (d *decoder) sandbox(r *Record) {
	if d.err != nil {
		return
	}
	sb := &r.Sandbox
	sb.Kind = allocation.Kind(d.kind)
	if d.kind != "" && !sb.Kind.Known() {
		d.fail("the sandbox kind is not a known kind")
	}
	sb.Provider, sb.ProviderStored = allocation.Provider(d.provider), d.provider != ""
	if !sb.ProviderStored {
		sb.Provider = allocation.Cloudflare
	} else if !sb.Provider.Known() {
		d.fail("the sandbox provider is not a known provider")
	}
	if d.allocName != "" {
		a, ok := allocation.ByName(d.allocName)
		if !ok {
			d.fail("the sandbox allocation is not a known allocation")
		}
		sb.Allocation = a
	}
	if d.hasReq {
		a, ok := decodeRequest(d.allocReq)
		switch {
		case !ok:
			d.fail("sandboxAllocationRequest is not a valid allocation request")
		case d.allocName != "" && a != sb.Allocation:
			d.fail("sandboxAllocation disagrees with sandboxAllocationRequest")
		}
		sb.Allocation = a
	}
	// The record's allocation, stored or (for a shared kind or id) derived,
	// must be on its provider.
	if a := allocation.RecordAllocation(sb.Allocation, sb.Kind, sb.ID); !a.IsZero() && a.Provider() != sb.Provider {
		d.fail("the sandbox allocation is not on the stored provider")
	}
	if d.hasRoute {
		const p = "metadata.workspace.sandboxRoute."
		sb.Route = &Route{d.str(d.route, p, "kind"), d.str(d.route, p, "routeKey"), d.str(d.route, p, "suffix")}
	}
}

// decodeRequest reads a request object map with exactly its members.
func decodeRequest(item Item) (allocation.Allocation, bool) {
	prov, ok := item["provider"].(*types.AttributeValueMemberM)
	if !ok || len(item) != 2 || len(prov.Value) != 2 {
		return allocation.Allocation{}, false
	}
	id, ok1 := prov.Value["id"].(*types.AttributeValueMemberS)
	account, ok2 := prov.Value["account"].(*types.AttributeValueMemberS)
	it, ok3 := item["instanceType"].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 || !ok3 {
		return allocation.Allocation{}, false
	}
	return allocation.FromRequest(allocation.Request{
		Provider:     allocation.RequestProvider{ID: allocation.Provider(id.Value), Account: account.Value},
		InstanceType: it.Value,
	})
}
