package start

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json/jsontext"

	"github.com/cloud-agent/control-plane/shared/allocation"
)

// Fingerprint is the SHA-256, in hex, of the validated request in canonical
// form (RFC 8785), the environmentId as sent (not what it resolved to):
// without the operation key, without null members, without
// members equal to their default (sandboxKind isolated), without
// initialTurn and runtime left empty, and with a kilo allocation object
// replaced by its name. The canonical form is written directly, its
// members in RFC 8785's order (their names are ASCII, so byte order), and
// its strings quoted as RFC 8785 quotes them (jsontext's quoting).
func Fingerprint(r *Request, a allocation.Allocation) (string, error) {
	w := canonical{b: make([]byte, 0, 256)}
	w.open()
	w.object("agent", func() {
		w.str("mode", r.Agent.Mode, false)
		w.str("model", r.Agent.Model, false)
		w.str("variant", r.Agent.Variant, false)
	})
	w.str("createdOnPlatform", r.CreatedOnPlatform, false)
	w.str("environmentId", r.EnvironmentID, false)
	if r.Prompt != nil {
		w.object("initialTurn", func() { w.str("prompt", *r.Prompt, true) })
	}
	w.str("orgId", r.OrgID, false)
	w.object("repository", func() {
		w.str("branch", r.Repository.Branch, false)
		w.str("repo", r.Repository.Repo, false)
		w.str("type", r.Repository.Type, false)
		w.str("url", r.Repository.URL, false)
	})
	kind := r.Kind != "" && r.Kind != allocation.KindIsolated
	if a.BYOC() || !a.IsZero() || kind {
		w.object("runtime", func() {
			switch {
			case a.BYOC():
				req := a.Request()
				w.object("sandboxAllocation", func() {
					w.str("instanceType", req.InstanceType, true)
					w.object("provider", func() {
						w.str("account", req.Provider.Account, true)
						w.str("id", string(req.Provider.ID), true)
					})
				})
			case !a.IsZero():
				w.str("sandboxAllocation", a.Name(), false)
			}
			if kind {
				w.str("sandboxKind", string(r.Kind), false)
			}
		})
	}
	w.close()
	if w.err != nil {
		return "", w.err
	}
	sum := sha256.Sum256(w.b)
	return hex.EncodeToString(sum[:]), nil
}

// canonical writes JSON objects whose members come in order. It keeps the
// first error (a string that is not valid UTF-8).
type canonical struct {
	b     []byte
	first bool // no member yet in the object open
	err   error
}

func (w *canonical) open() { w.b, w.first = append(w.b, '{'), true }

func (w *canonical) close() { w.b, w.first = append(w.b, '}'), false }

// name writes a member's name, after a comma unless it is the first.
func (w *canonical) name(n string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, '"', ':')
}

// str writes a string member, left out when empty unless always.
func (w *canonical) str(name, v string, always bool) {
	if v == "" && !always {
		return
	}
	w.name(name)
	var err error
	if w.b, err = jsontext.AppendQuote(w.b, v); err != nil && w.err == nil {
		w.err = err
	}
}

// object writes an object member whose members members writes.
func (w *canonical) object(name string, members func()) {
	w.name(name)
	w.open()
	members()
	w.close()
}
