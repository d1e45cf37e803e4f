// Package start is a session start as a value: its request, validated and
// read strictly, the command that carries it with its caller, the
// request's fingerprint for the operation ledger, and its answer and
// metrics. It reads and writes nothing: the executor (package commit)
// carries a command out, for the session start route and a trigger's runs
// (package triggerrun: the firing, a start now, a delivery) alike.
package start

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// Limits of the contract.
const (
	maxPrompt   = 100000
	maxPlatform = 100
	maxURL      = 2048
	maxBranch   = 255
	maxMode     = 50
	maxModel    = 200
	maxVariant  = 50
	// ReservedKeyPrefix starts the operation keys of trigger firings.
	ReservedKeyPrefix = "trigger:"
	// PlatformScheduled is the createdOnPlatform of trigger firings.
	PlatformScheduled = "scheduled"
	// PlatformNow is the createdOnPlatform of a trigger started now.
	PlatformNow = "trigger-now"
	// PlatformWebhook is the createdOnPlatform of a webhook delivery's
	// session.
	PlatformWebhook = "webhook"
)

// validOperationKey: 1 to 128 of A-Z, a-z, 0-9, "_", ".", ":" and "-".
func validOperationKey(key string) bool { return ids.OfChars(key, 128, "_.:-") }

// validGitHubRepo: owner/name, the owner 1 to 39 of A-Z, a-z, 0-9 and "-",
// the name 1 to 100 of those, "." and "_".
func validGitHubRepo(repo string) bool {
	owner, name, ok := strings.Cut(repo, "/")
	return ok && ids.OfChars(owner, 39, "-") && ids.OfChars(name, 100, "-._")
}

// Request is a validated start request. Its allocation is kept as sent: it
// is judged (check 1) only after the org membership check.
type Request struct {
	OperationKey      string
	OrgID             string
	Repository        session.Repository
	Agent             session.Agent
	Prompt            *string // initialTurn.prompt; nil when absent
	Allocation        jsontext.Value
	Kind              allocation.Kind // "" when not sent
	CreatedOnPlatform string
	// EnvironmentID is the environment the start names (contract v7), ""
	// for none: its user's default, else its org's, applies.
	EnvironmentID string
}

func bad(detail string) error { return problem.New(problem.InvalidRequest, detail) }

var errSecret = bad("The request contains what looks like a secret token; send credentials through the provider's integration instead.")

// startBody is a POST /v1/sessions body as JSON has it.
type startBody struct {
	OperationKey *string                 `json:"operationKey"`
	OrgID        *string                 `json:"orgId"`
	Repository   *session.RepositoryBody `json:"repository"`
	Agent        *session.AgentBody      `json:"agent"`
	InitialTurn  *struct {
		Prompt *string `json:"prompt"`
	} `json:"initialTurn"`
	Runtime *struct {
		SandboxAllocation jsontext.Value `json:"sandboxAllocation"`
		SandboxKind       *string        `json:"sandboxKind"`
	} `json:"runtime"`
	CreatedOnPlatform *string `json:"createdOnPlatform"`
	EnvironmentID     *string `json:"environmentId"`
	// runtime's members sent at the top level (where POST /v1/triggers
	// takes sandboxAllocation): refused with where they go.
	SandboxAllocation jsontext.Value `json:"sandboxAllocation"`
	SandboxKind       jsontext.Value `json:"sandboxKind"`
}

// misplaced refuses a member of runtime sent at the top level, saying
// where it goes.
func (b *startBody) misplaced() error {
	for i, v := range []jsontext.Value{b.SandboxAllocation, b.SandboxKind} {
		if name := []string{"sandboxAllocation", "sandboxKind"}[i]; v != nil {
			return bad(name + " is not a known member: it goes in runtime, as runtime." + name + ".")
		}
	}
	return nil
}

// ParseRequest validates a POST /v1/sessions body and the Idempotency-Key
// header (nil when it was not sent; both given, they must be equal).
// Reserved values (trigger: keys, the triggers' platforms) are refused: they
// belong to trigger firings.
func ParseRequest(body []byte, idempotencyKey *string) (*Request, error) {
	var b startBody
	if err := jsonbody.Decode(body, &b); err != nil {
		return nil, err
	}
	if err := b.misplaced(); err != nil {
		return nil, err
	}
	var m problem.Members
	var r Request
	key := m.Optional("operationKey", b.OperationKey)
	r.OrgID = m.Optional("orgId", b.OrgID)
	if m.RequiredObject("repository", b.Repository != nil) {
		r.Repository = session.ParseRepository(&m, "repository", b.Repository)
	}
	if m.RequiredObject("agent", b.Agent != nil) {
		r.Agent = session.ParseAgent(&m, "agent", b.Agent)
	}
	if b.InitialTurn != nil {
		r.Prompt = b.InitialTurn.Prompt
	}
	var kind *string
	if rt := b.Runtime; rt != nil {
		r.Allocation = jsonbody.NameOrObject(&m, "runtime.sandboxAllocation", rt.SandboxAllocation)
		kind = rt.SandboxKind
	}
	r.CreatedOnPlatform = m.Optional("createdOnPlatform", b.CreatedOnPlatform)
	r.EnvironmentID = m.Optional("environmentId", b.EnvironmentID)
	if err := m.Err(); err != nil {
		return nil, err
	}
	if h := idempotencyKey; h != nil {
		// The header's own faults are told as the header's, before it is
		// compared with the body's key.
		if err := CheckIdempotencyKey(*h); err != nil {
			return nil, err
		}
		if key != "" && key != *h {
			return nil, bad("operationKey and the Idempotency-Key header must be equal when both are given.")
		}
		key = *h
	}
	r.OperationKey = key
	if kind != nil {
		var err error
		if r.Kind, err = allocation.ParseKind(*kind); err != nil {
			return nil, err
		}
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// CheckIdempotencyKey checks an Idempotency-Key header on every rule of
// an operation key: not empty, 1 to 128 of its characters, not starting
// with "trigger:", and no secret marker.
func CheckIdempotencyKey(h string) error {
	switch {
	case h == "":
		return bad("The Idempotency-Key header may not be empty.")
	case !validOperationKey(h):
		return bad("The Idempotency-Key header must be 1 to 128 of A-Z, a-z, 0-9, _, ., : and -.")
	case strings.HasPrefix(h, ReservedKeyPrefix):
		return bad("The Idempotency-Key header may not start with \"trigger:\".")
	case hasSecret(h):
		return errSecret
	}
	return nil
}

func (r *Request) validate() error {
	switch {
	case strings.HasPrefix(r.OperationKey, ReservedKeyPrefix):
		return bad("operationKey may not start with \"trigger:\".")
	case r.CreatedOnPlatform == PlatformScheduled || r.CreatedOnPlatform == PlatformNow || r.CreatedOnPlatform == PlatformWebhook:
		return bad("createdOnPlatform \"" + r.CreatedOnPlatform + "\" is reserved for triggers.")
	}
	return r.Validate()
}

// Validate checks what every start must pass, whoever built it: the
// limits, no control character in the agent's names or createdOnPlatform,
// and no secret marker in a member but the prompt (the allocation as sent
// included). The reserved values are not checked here: a trigger's runs
// use them, and the operation keys they build (trigger:…) are not held to
// a caller's 128 characters.
func (r *Request) Validate() error {
	switch {
	case r.OperationKey != "" && !strings.HasPrefix(r.OperationKey, ReservedKeyPrefix) && !validOperationKey(r.OperationKey):
		return bad("operationKey must be 1 to 128 of A-Z, a-z, 0-9, _, ., : and -.")
	case r.OrgID != "" && !ids.IsID(r.OrgID):
		return bad("orgId is not a valid org id.")
	case r.Prompt != nil && utf8.RuneCountInString(*r.Prompt) > maxPrompt:
		return bad("The prompt is longer than 100000 characters.")
	case utf8.RuneCountInString(r.CreatedOnPlatform) > maxPlatform:
		return bad("createdOnPlatform is longer than 100 characters.")
	case hasControl(r.CreatedOnPlatform):
		return bad("createdOnPlatform may not hold control characters.")
	case r.EnvironmentID != "" && !ids.IsPathID(r.EnvironmentID):
		return bad("environmentId is not a valid environment id.")
	}
	if err := validateRepository(r.Repository); err != nil {
		return err
	}
	if err := validateAgent(r.Agent); err != nil {
		return err
	}
	rep, ag := r.Repository, r.Agent
	var alloc any // the allocation as sent: a name, or an object of strings
	_ = json.Unmarshal(r.Allocation, &alloc)
	if hasSecret([]any{r.OperationKey, r.OrgID, r.EnvironmentID, r.CreatedOnPlatform, rep.Type, rep.Repo, rep.URL, rep.Branch, ag.Mode, ag.Model, ag.Variant, alloc}) {
		return errSecret
	}
	return nil
}

// validateRepository checks a repository's limits.
func validateRepository(rep session.Repository) error {
	switch rep.Type {
	case "github":
		if !validGitHubRepo(rep.Repo) {
			return bad("repository.repo must be owner/name.")
		}
	default:
		if !validURL(rep.URL) {
			return bad("repository.url must be an https URL of at most 2048 characters, with no user info, query or fragment.")
		}
	}
	if rep.Branch != "" && (utf8.RuneCountInString(rep.Branch) > maxBranch || !validRefName(rep.Branch)) {
		return bad("repository.branch must be a valid git branch name of at most 255 characters.")
	}
	return nil
}

func validURL(s string) bool {
	if utf8.RuneCountInString(s) > maxURL || strings.ContainsAny(s, "#?") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil && u.Opaque == ""
}

// validRefName applies git's rules for a branch name (git check-ref-format
// --branch).
func validRefName(s string) bool {
	if s == "" || s == "@" || s == "HEAD" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") ||
		strings.HasSuffix(s, ".") || strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "@{") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return false
		}
	}
	for _, part := range strings.Split(s, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// validateAgent checks an agent's limits: mode, model and variant are not
// empty, at most 50, 200 and 50 characters, and hold no control character.
func validateAgent(ag session.Agent) error {
	check := func(name, v string, max int, required bool) error {
		if (v == "" && required) || utf8.RuneCountInString(v) > max {
			return bad("agent." + name + " must not be empty and may be at most " + strconv.Itoa(max) + " characters.")
		}
		if hasControl(v) {
			return bad("agent." + name + " may not hold control characters.")
		}
		return nil
	}
	if err := check("mode", ag.Mode, maxMode, true); err != nil {
		return err
	}
	if err := check("model", ag.Model, maxModel, true); err != nil {
		return err
	}
	return check("variant", ag.Variant, maxVariant, false)
}

// hasControl reports whether s holds a control character (U+0000 to
// U+001F, U+007F to U+009F): names and labels are one line of text; only
// the prompt may hold line breaks and tabs.
func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

func hasSecret(v any) bool {
	switch x := v.(type) {
	case string:
		return ids.HasCredential(x)
	case map[string]any:
		for _, e := range x {
			if hasSecret(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasSecret(e) {
				return true
			}
		}
	}
	return false
}
