package store

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/session"
)

// An environment's item is ENVIRONMENT#<id> / ENVIRONMENT. Its owner's
// default is copied, whole, to the owner's default pointer,
// DEFAULTENV#u#<userId> or DEFAULTENV#o#<orgId> / DEFAULTENV, so that a
// start reads a default and its content in one request.
//
// An owner's names are claimed, compared without regard to case, by
// ENVNAME#<owner>#<folded name> / ENVNAME, and its environments counted
// by ENVIRONMENTS#<owner> / COUNT, where <owner> is u#<userId> or
// o#<orgId> (ownerOf). The owner's environments are listed by the index
// EnvironmentsByOwner (environmentOwner, environmentListedAt): an
// environment's item holds neither listedAt nor dueShard, so that it is
// in no trigger index.
const (
	environmentPrefix   = "ENVIRONMENT#"
	environmentSortKey  = "ENVIRONMENT"
	defaultPrefix       = "DEFAULTENV#"
	defaultSortKey      = "DEFAULTENV"
	namePrefix          = "ENVNAME#"
	nameSortKey         = "ENVNAME"
	envCountPrefix      = "ENVIRONMENTS#"
	environmentsByOwner = "EnvironmentsByOwner"
)

func environmentKey(id string) Item { return key(environmentPrefix+id, environmentSortKey) }

// ownerOf is the owner of the environments of user in org ("" for none):
// o#<orgId> when there is an org, else u#<userId>.
func ownerOf(userID, orgID string) string {
	if orgID != "" {
		return "o#" + orgID
	}
	return "u#" + userID
}

// defaultKey is the default pointer of the owner of environments of user
// in org ("" for none): the org's when there is one.
func defaultKey(userID, orgID string) Item {
	return key(defaultPrefix+ownerOf(userID, orgID), defaultSortKey)
}

// nameKey is the claim of e's name among its owner's.
func nameKey(e *environment.Environment) Item {
	return key(namePrefix+ownerOf(e.OwnerUserID, e.OrgID)+"#"+environment.FoldName(e.Name), nameSortKey)
}

// envCountKey is the count of the environments of e's owner.
func envCountKey(e *environment.Environment) Item {
	return key(envCountPrefix+ownerOf(e.OwnerUserID, e.OrgID), countSortKey)
}

// errUnsealed is a secret variable whose value is not yet its KMS
// ciphertext: the table never keeps a secret in clear.
var errUnsealed = errors.New("store: a secret variable is not sealed")

// encodeEnvironment returns an environment's item: PK, SK, environmentId,
// ownerUserId, orgId?, name, description?, variables (M: each {secret
// (BOOL), value (S) for a plain one, sealed (B, its KMS ciphertext) for a
// secret one}), setupCommands (L), sandboxAllocation? or
// sandboxAllocationRequest?, createdAt, environmentOwner and
// environmentListedAt (the creation to the nanosecond: the listing's
// index), updatedAt, version (N) and triggers? (N, the triggers that name
// it, left out when none). A secret not yet sealed is errUnsealed.
func encodeEnvironment(e *environment.Environment) (Item, error) {
	item := environmentKey(e.ID)
	item["environmentId"] = S(e.ID)
	item["ownerUserId"] = S(e.OwnerUserID)
	PutS(item, "orgId", e.OrgID)
	item["name"] = S(e.Name)
	PutS(item, "description", e.Description)
	vars, err := encodeVariables(e.Variables)
	if err != nil {
		return nil, err
	}
	item["variables"] = vars
	item["setupCommands"] = L(e.SetupCommands)
	putSaved(item, e.SavedAllocation, e.SavedRequest)
	item["createdAt"] = S(formatTime(e.CreatedAt))
	item["environmentOwner"] = S(ownerOf(e.OwnerUserID, e.OrgID))
	item["environmentListedAt"] = S(listedAt(e.CreatedAt))
	item["updatedAt"] = S(formatTime(e.UpdatedAt))
	item["version"] = N(int64(e.Version))
	if e.Triggers != 0 {
		item["triggers"] = N(int64(e.Triggers))
	}
	return item, nil
}

// encodeVariables returns an environment's variables: each {secret
// (BOOL), value (S) for a plain one, sealed (B, its KMS ciphertext) for a
// secret one}; a secret not yet sealed is errUnsealed.
func encodeVariables(vars map[string]environment.Variable) (types.AttributeValue, error) {
	out := make(Item, len(vars))
	for name, v := range vars {
		switch {
		case v.Secret && v.Sealed == nil:
			return nil, errUnsealed
		case v.Secret:
			out[name] = M(Item{"secret": Bool(true), "sealed": &types.AttributeValueMemberB{Value: v.Sealed}})
		default:
			out[name] = M(Item{"secret": Bool(false), "value": S(v.Value)})
		}
	}
	return M(out), nil
}

// encodeDefault returns the default pointer of e's owner: e's item under
// the pointer's key, out of the listing's index, without the count of
// its triggers (which moves without its content).
func encodeDefault(e *environment.Environment) (Item, error) {
	item, err := encodeEnvironment(e)
	if err == nil {
		maps.Copy(item, defaultKey(e.OwnerUserID, e.OrgID))
		delete(item, "environmentOwner")
		delete(item, "environmentListedAt")
		delete(item, "triggers")
	}
	return item, err
}

// decodeEnvironment reads an environment's item, or a default pointer's
// copy of one; its id is the environmentId attribute, which an
// environment's item holds as its key does. Absent and NULL attributes are
// unset, as is an empty string; a secret variable holding a value in
// clear, or without its ciphertext, does not decode. A shared-era saved
// allocation (cloudflare-shared) decodes as stored: the policy judges it
// as a saved value.
func decodeEnvironment(item Item) (*environment.Environment, error) {
	var r AttrReader
	pk, sk := r.Str(item, "", "PK"), r.Str(item, "", "SK")
	e := &environment.Environment{
		ID: r.Str(item, "", "environmentId"), OwnerUserID: r.Str(item, "", "ownerUserId"), OrgID: r.Str(item, "", "orgId"),
		Name: r.Str(item, "", "name"), Description: r.Str(item, "", "description"),
	}
	if vars, ok := r.Map(item, "", "variables"); ok {
		e.Variables = decodeVariables(&r, vars)
	}
	e.SetupCommands, _ = r.Strings(item, "", "setupCommands")
	e.SavedAllocation = r.Str(item, "", "sandboxAllocation")
	e.SavedRequest = decodeSavedRequest(&r, item)
	e.CreatedAt = r.Time(item, "", "createdAt", session.TimeFormat)
	if r.Str(item, "", "environmentListedAt") != "" {
		e.CreatedAt = r.Time(item, "", "environmentListedAt", listedAtFormat) // to the nanosecond
	}
	e.UpdatedAt = r.Time(item, "", "updatedAt", session.TimeFormat)
	e.Version = int(r.Int(item, "", "version"))
	e.Triggers = int(r.Int(item, "", "triggers"))
	switch {
	case r.Err() != nil:
		return nil, failed("read environment", r.Err())
	case e.ID == "" || e.OwnerUserID == "" || e.Name == "":
		return nil, failed("read environment", errors.New("environmentId, ownerUserId or name is missing"))
	case sk == environmentSortKey && pk != environmentPrefix+e.ID:
		return nil, failed("read environment", errors.New("environmentId differs from the key"))
	case sk != environmentSortKey && !strings.HasPrefix(pk, defaultPrefix):
		return nil, failed("read environment", errors.New("neither an environment nor a default pointer"))
	}
	return e, nil
}

// decodeVariables reads an environment's variables, by name.
func decodeVariables(r *AttrReader, vars Item) map[string]environment.Variable {
	out := make(map[string]environment.Variable, len(vars))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		p := "variables." + name + "."
		m, ok := r.Map(vars, "variables.", name)
		if !ok {
			r.Fail("variables.%s is not a variable", name)
			return nil
		}
		v := environment.Variable{Secret: r.Bool(m, p, "secret")}
		if v.Secret {
			v.Sealed = r.Bytes(m, p, "sealed")
			if m["value"] != nil || v.Sealed == nil {
				r.Fail("%s a secret variable holds a value, or no ciphertext", p)
			}
		} else {
			v.Value = r.Str(m, p, "value")
		}
		out[name] = v
	}
	return out
}

// putSaved puts a saved allocation, of a trigger or an environment: its
// name (sandboxAllocation), or its byoc object (sandboxAllocationRequest).
func putSaved(item Item, name string, req *allocation.Request) {
	PutS(item, "sandboxAllocation", name)
	if req != nil {
		item["sandboxAllocationRequest"] = encodeRequest(*req)
	}
}

// decodeSavedRequest reads a saved byoc object (sandboxAllocationRequest)
// of a trigger or an environment; nil when none is saved.
func decodeSavedRequest(r *AttrReader, item Item) *allocation.Request {
	req, ok := r.Map(item, "", "sandboxAllocationRequest")
	if !ok {
		return nil
	}
	const p = "sandboxAllocationRequest."
	saved := &allocation.Request{}
	if prov, ok := r.Map(req, p, "provider"); ok {
		const pp = p + "provider."
		saved.Provider = allocation.RequestProvider{ID: allocation.Provider(r.Str(prov, pp, "id")), Account: r.Str(prov, pp, "account")}
	}
	saved.InstanceType = r.Str(req, p, "instanceType")
	return saved
}
