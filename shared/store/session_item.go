package store

import (
	"math/big"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Keys of a session item.
const (
	sessionPrefix  = "SESSION#"
	sessionSortKey = "METADATA"
)

// SessionKey returns the primary key of a session's item.
func SessionKey(sessionID string) Item { return key(sessionPrefix+sessionID, sessionSortKey) }

// IsSessionKey reports whether a primary key is a session item's.
func IsSessionKey(pk, sk string) bool {
	return strings.HasPrefix(pk, sessionPrefix) && sk == sessionSortKey
}

// InvalidSessionError is a stored session that does not decode, with its
// owner when that could still be read, so that the owner can be told.
type InvalidSessionError struct {
	SessionID string
	Reason    string
	// UserID and OrgID are the owner's, when they could be read; UserID is
	// "" otherwise.
	UserID, OrgID string
}

func (e *InvalidSessionError) Error() string {
	return "session record " + e.SessionID + " is invalid: " + e.Reason
}

// EncodeSession returns the version 2 item of a record, as the current
// writer stores it: the provider and the kind always, a named allocation
// by name, a byoc allocation as its request.
func EncodeSession(r *session.Record) Item {
	identity := Item{"sessionId": S(r.SessionID), "userId": S(r.UserID)}
	PutS(identity, "orgId", r.OrgID)
	PutS(identity, "botId", r.BotID)
	PutS(identity, "createdOnPlatform", r.CreatedOnPlatform)

	ws := Item{}
	PutS(ws, "sandboxId", r.Sandbox.ID)
	PutS(ws, "sandboxKind", string(r.Sandbox.Kind))
	PutS(ws, "sandboxProvider", string(r.Sandbox.Provider))
	if a := r.Sandbox.Allocation; !a.IsZero() {
		if a.BYOC() {
			ws["sandboxAllocationRequest"] = encodeRequest(a.Request())
		} else {
			ws["sandboxAllocation"] = S(a.Name())
		}
	}

	metadata := Item{
		"identity":  M(identity),
		"workspace": M(ws),
		"lifecycle": M(Item{"version": N(1), "timestamp": N(r.CreatedAt.UnixMilli())}),
	}
	if rep := r.Repository; rep != (session.Repository{}) {
		sec := Item{}
		PutS(sec, "type", rep.Type)
		PutS(sec, "repo", rep.Repo)
		PutS(sec, "url", rep.URL)
		PutS(sec, "branch", rep.Branch)
		metadata["repository"] = M(sec)
	}
	if ag := r.Agent; ag != (session.Agent{}) {
		sec := Item{}
		PutS(sec, "mode", ag.Mode)
		PutS(sec, "model", ag.Model)
		PutS(sec, "variant", ag.Variant)
		metadata["agent"] = M(sec)
	}
	if e := r.Environment; e != nil {
		metadata["environment"] = M(Item{"environmentId": S(e.ID), "version": N(int64(e.Version)), "name": S(e.Name)})
	}
	encodeRunSections(metadata, r)
	item := SessionKey(r.SessionID)
	item["metadataSchemaVersion"] = N(2)
	item["metadata"] = M(metadata)
	return item
}

// encodeRequest is a request object as a session and a trigger store it.
func encodeRequest(r allocation.Request) types.AttributeValue {
	return M(Item{
		"provider":     M(Item{"id": S(string(r.Provider.ID)), "account": S(r.Provider.Account)}),
		"instanceType": S(r.InstanceType),
	})
}

// DecodeSession reads a session item of any shape the table holds. A
// record that does not validate is an *InvalidSessionError; unknown
// attributes and sections are ignored; absent, NULL and empty-string
// attributes are unset.
func DecodeSession(item Item) (*session.Record, error) {
	d := newSessionDecoder()
	pk := d.Str(item, "", "PK")
	id, ok := strings.CutPrefix(pk, sessionPrefix)
	if !ok || id == "" {
		return nil, &InvalidSessionError{SessionID: pk, Reason: "the key is not a session key"}
	}
	r := &session.Record{SessionID: id}
	version, hasVersion := d.Num(item, "", "metadataSchemaVersion")
	metadata, hasMetadata := d.Map(item, "", "metadata")
	switch {
	case d.Err() != nil:
	case hasVersion && hasMetadata && isTwo(version):
		r.SchemaVersion = 2
		d.version2(r, metadata)
	case !hasVersion && !hasMetadata:
		r.SchemaVersion = 1
		d.version1(r, item)
	default:
		d.Fail("metadataSchemaVersion and metadata are neither version 2 nor both absent")
	}
	d.sandbox(r)
	if d.Err() != nil {
		e := &InvalidSessionError{SessionID: id, Reason: d.Err().Error()}
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
	d := newSessionDecoder()
	from := item
	md, hasMetadata := d.Map(item, "", "metadata")
	switch {
	case d.Err() != nil:
		return "", ""
	case hasMetadata:
		from, _ = d.Map(md, "", "identity")
	}
	userID, orgID = d.Str(from, "", "userId"), d.Str(from, "", "orgId")
	if d.Err() != nil {
		return "", ""
	}
	return userID, orgID
}

func isTwo(v string) bool {
	x, ok := new(big.Rat).SetString(v)
	return ok && x.Cmp(big.NewRat(2, 1)) == 0
}

// sessionDecoder reads a session's attributes, and keeps the workspace's
// raw ones for sandbox, which checks them together.
type sessionDecoder struct {
	AttrReader
	allocName string
	allocReq  Item
	hasReq    bool
	provider  string
	kind      string
	route     Item
	hasRoute  bool
}

// newSessionDecoder reads by the contract's rule for session records:
// absent, NULL and empty-string attributes are unset.
func newSessionDecoder() *sessionDecoder {
	return &sessionDecoder{AttrReader: AttrReader{EmptyIsUnset: true}}
}

func (d *sessionDecoder) owner(r *session.Record, item Item, path string) {
	r.UserID = d.Str(item, path, "userId")
	r.OrgID = d.Str(item, path, "orgId")
	r.BotID = d.Str(item, path, "botId")
	if r.UserID == "" {
		d.Fail("%suserId is missing", path)
	}
	if inner := d.Str(item, path, "sessionId"); inner != "" && inner != r.SessionID {
		d.Fail("%ssessionId differs from the key's", path)
	}
}

func (d *sessionDecoder) version2(r *session.Record, md Item) {
	identity, _ := d.Map(md, "metadata.", "identity")
	d.owner(r, identity, "metadata.identity.")
	r.CreatedOnPlatform = d.Str(identity, "metadata.identity.", "createdOnPlatform")

	if rep, ok := d.Map(md, "metadata.", "repository"); ok {
		r.Repository = d.Repository(rep, "metadata.repository.")
	}
	if ag, ok := d.Map(md, "metadata.", "agent"); ok {
		r.Agent = d.Agent(ag, "metadata.agent.")
	}
	if env, ok := d.Map(md, "metadata.", "environment"); ok {
		const p = "metadata.environment."
		r.Environment = &session.EnvironmentRef{ID: d.Str(env, p, "environmentId"), Name: d.Str(env, p, "name"), Version: int(d.Int(env, p, "version"))}
	}
	d.run(r, md)
	lc, _ := d.Map(md, "metadata.", "lifecycle")
	d.Num(lc, "metadata.lifecycle.", "version")
	r.CreatedAt = d.EpochMillis(lc, "metadata.lifecycle.", "timestamp")

	ws, _ := d.Map(md, "metadata.", "workspace")
	const p = "metadata.workspace."
	r.Sandbox.ID = d.Str(ws, p, "sandboxId")
	d.kind = d.Str(ws, p, "sandboxKind")
	d.provider = d.Str(ws, p, "sandboxProvider")
	d.allocName = d.Str(ws, p, "sandboxAllocation")
	d.allocReq, d.hasReq = d.Map(ws, p, "sandboxAllocationRequest")
	d.route, d.hasRoute = d.Map(ws, p, "sandboxRoute")
}

func (d *sessionDecoder) version1(r *session.Record, item Item) {
	d.owner(r, item, "")
	repo, url := d.Str(item, "", "githubRepo"), d.Str(item, "", "gitUrl")
	switch {
	case repo != "":
		r.Repository = session.Repository{Type: "github", Repo: repo}
	case url != "":
		r.Repository = session.Repository{Type: "git", URL: url}
	}
	r.Repository.Branch = d.Str(item, "", "branchName")
	r.CreatedOnPlatform = d.Str(item, "", "platform")
	r.Agent = session.Agent{Mode: d.Str(item, "", "mode"), Model: d.Str(item, "", "model")}
	d.Num(item, "", "version")
	r.CreatedAt = d.EpochMillis(item, "", "timestamp")
	r.Sandbox.ID = d.Str(item, "", "sandboxId")
}

// sandbox validates the stored kind, provider, allocation and route
// together.
func (d *sessionDecoder) sandbox(r *session.Record) {
	if d.Err() != nil {
		return
	}
	sb := &r.Sandbox
	sb.Kind = allocation.Kind(d.kind)
	if d.kind != "" && !sb.Kind.Known() {
		d.Fail("the sandbox kind is not a known kind")
	}
	sb.Provider, sb.ProviderStored = allocation.Provider(d.provider), d.provider != ""
	if !sb.ProviderStored {
		sb.Provider = allocation.Cloudflare
	} else if !sb.Provider.Known() {
		d.Fail("the sandbox provider is not a known provider")
	}
	if d.allocName != "" {
		a, ok := allocation.ByName(d.allocName)
		if !ok {
			d.Fail("the sandbox allocation is not a known allocation")
		}
		sb.Allocation = a
	}
	if d.hasReq {
		a, ok := decodeRequest(d.allocReq)
		switch {
		case !ok:
			d.Fail("sandboxAllocationRequest is not a valid allocation request")
		case d.allocName != "" && a != sb.Allocation:
			d.Fail("sandboxAllocation disagrees with sandboxAllocationRequest")
		}
		sb.Allocation = a
	}
	// The record's allocation, stored or (for a shared kind or id) derived,
	// must be on its provider.
	if a := allocation.RecordAllocation(sb.Allocation, sb.Kind, sb.ID); !a.IsZero() && a.Provider() != sb.Provider {
		d.Fail("the sandbox allocation is not on the stored provider")
	}
	if d.hasRoute {
		const p = "metadata.workspace.sandboxRoute."
		sb.Route = &session.Route{Kind: d.Str(d.route, p, "kind"), RouteKey: d.Str(d.route, p, "routeKey"), Suffix: d.Str(d.route, p, "suffix")}
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
