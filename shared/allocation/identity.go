package allocation

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Kind is a sandbox kind. New sessions are isolated or code-review; shared
// exists only in stored records.
type Kind string

// The sandbox kinds.
const (
	KindIsolated   Kind = "isolated"
	KindCodeReview Kind = "code-review"
	KindShared     Kind = "shared"
)

// Known reports whether k is one of the stored kinds.
func (k Kind) Known() bool {
	return k == KindIsolated || k == KindCodeReview || k == KindShared
}

// ParseKind reads runtime.sandboxKind: isolated, code-review or shared (which
// is accepted here and refused as retired when a session is created, see
// Policy.Place). Anything else is invalid_request.
func ParseKind(s string) (Kind, error) {
	if k := Kind(s); k.Known() {
		return k, nil
	}
	return "", problem.New(problem.InvalidRequest, "runtime.sandboxKind must be \"isolated\" or \"code-review\".")
}

// sandboxIDPrefix and sandboxIDSalt make the sandbox id of a session.
const (
	sandboxIDPrefix = "sbx-"
	sandboxIDSalt   = "control-isolated-v1:"
	idHexLen        = 48
)

// SandboxID derives the sandbox id of a new session from its session id
// alone: "sbx-" and the first 48 lowercase hex characters of
// SHA-256("control-isolated-v1:<sessionId>").
func SandboxID(sessionID string) string {
	sum := sha256.Sum256([]byte(sandboxIDSalt + sessionID))
	return sandboxIDPrefix + hex.EncodeToString(sum[:])[:idHexLen]
}

// IDClass is what a stored sandbox id says about its sandbox.
type IDClass int

// The id classes of section 3 of the contract.
const (
	// ClassUnknown is any other id, or none.
	ClassUnknown IDClass = iota
	// ClassSandbox is "sbx-" + 48 hex: the current form, whose kind is the
	// stored one.
	ClassSandbox
	// ClassLegacyIsolated is "ses-", "istd-", "crv-" or "dind-" + 48 hex.
	ClassLegacyIsolated
	// ClassLegacyRouteKey is "org-", "usr-", "bot-" or "ubt-" + 48 hex: a
	// shared sandbox's route key.
	ClassLegacyRouteKey
	// ClassLegacyOwnerKey is a raw owner key, any id containing "__": the
	// oldest shared form.
	ClassLegacyOwnerKey
)

var (
	legacyIsolatedPrefixes = []string{"ses-", "istd-", "crv-", "dind-"}
	routeKeyPrefixes       = []string{"org-", "usr-", "bot-", "ubt-"}
)

// Classify returns the class of a stored sandbox id.
func Classify(id string) IDClass {
	switch {
	case hexAfter(id, sandboxIDPrefix):
		return ClassSandbox
	case hexAfterAny(id, legacyIsolatedPrefixes):
		return ClassLegacyIsolated
	case hexAfterAny(id, routeKeyPrefixes):
		return ClassLegacyRouteKey
	case strings.Contains(id, "__"):
		return ClassLegacyOwnerKey
	}
	return ClassUnknown
}

// Shared reports whether the class is one of the legacy shared forms.
func (c IDClass) Shared() bool {
	return c == ClassLegacyRouteKey || c == ClassLegacyOwnerKey
}

func hexAfterAny(id string, prefixes []string) bool {
	for _, p := range prefixes {
		if hexAfter(id, p) {
			return true
		}
	}
	return false
}

// hexAfter reports whether id is prefix followed by exactly 48 hex digits.
func hexAfter(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != idHexLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Scope is a container's scope as shown to callers.
type Scope string

// The container scopes.
const (
	ScopeIsolated Scope = "isolated"
	ScopeShared   Scope = "shared"
	ScopeUnknown  Scope = "unknown"
)

// ContainerScope derives the scope from the stored kind first and only then
// from the id's class: a stored kind always wins over the id's prefix.
func ContainerScope(stored Kind, id string) Scope {
	switch stored {
	case KindIsolated, KindCodeReview:
		return ScopeIsolated
	case KindShared:
		return ScopeShared
	}
	switch c := Classify(id); {
	case c.Shared():
		return ScopeShared
	case c == ClassLegacyIsolated:
		return ScopeIsolated
	}
	return ScopeUnknown
}

// Label is the scope's label for people.
func (s Scope) Label() string {
	switch s {
	case ScopeIsolated:
		return "Isolated container"
	case ScopeShared:
		return "Shared container"
	}
	return "Unknown container"
}

// RecordAllocation is a stored record's allocation: the stored one, or,
// when none is stored, cloudflare-shared for a shared kind or a legacy shared
// id class. The session lookup and the operation ledger both use it.
func RecordAllocation(stored Allocation, kind Kind, id string) Allocation {
	if stored.IsZero() && (kind == KindShared || Classify(id).Shared()) {
		a, _ := ByName(CloudflareShared)
		return a
	}
	return stored
}
