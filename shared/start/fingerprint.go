package start

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json/jsontext"
	"encoding/json/v2"

	"github.com/cloud-agent/control-plane/shared/allocation"
)

// Fingerprint is the SHA-256, in hex, of the validated request in canonical
// form (RFC 8785): without the operation key, without null members, without
// members equal to their default (sandboxKind isolated), without objects left
// empty, and with a kilo allocation object replaced by its name.
func Fingerprint(r *Request, a allocation.Allocation) (string, error) {
	doc := map[string]any{}
	put := func(m map[string]any, name, v string) {
		if v != "" {
			m[name] = v
		}
	}
	put(doc, "orgId", r.OrgID)
	repo := map[string]any{}
	put(repo, "type", r.Repository.Type)
	put(repo, "repo", r.Repository.Repo)
	put(repo, "url", r.Repository.URL)
	put(repo, "branch", r.Repository.Branch)
	doc["repository"] = repo
	agent := map[string]any{}
	put(agent, "mode", r.Agent.Mode)
	put(agent, "model", r.Agent.Model)
	put(agent, "variant", r.Agent.Variant)
	doc["agent"] = agent
	if r.Prompt != nil {
		doc["initialTurn"] = map[string]any{"prompt": *r.Prompt}
	}
	runtime := map[string]any{}
	switch {
	case a.BYOC():
		runtime["sandboxAllocation"] = a.Request()
	case !a.IsZero():
		runtime["sandboxAllocation"] = a.Name()
	}
	if r.Kind != "" && r.Kind != allocation.KindIsolated {
		runtime["sandboxKind"] = string(r.Kind)
	}
	if len(runtime) > 0 {
		doc["runtime"] = runtime
	}
	put(doc, "createdOnPlatform", r.CreatedOnPlatform)
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	canonical := jsontext.Value(b)
	if err := canonical.Canonicalize(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}
