// Package allocation is the domain of sandbox allocations, pure Go with no
// I/O: the catalog of allocations and providers, parsing an allocation given
// as a name or a request object, the ordered checks and the fallback rule for
// saved values, the effective default, sandbox identity, the classes of every
// stored id shape, container scope and label, and the retired messages.
//
// Every rule of sections 2 and 3 of the contract lives here, each beside its
// test.
package allocation

import (
	"encoding/json/jsontext"
	"encoding/json/v2"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Provider is the id of a sandbox runtime provider.
type Provider string

// The known providers.
const (
	Cloudflare           Provider = "cloudflare"
	CloudflareContainers Provider = "cloudflare-containers"
	Vercel               Provider = "vercel"
)

var providerNames = map[Provider]string{
	Cloudflare:           "Cloudflare Sandbox",
	CloudflareContainers: "Cloudflare Containers",
	Vercel:               "Vercel Sandbox",
}

// Known reports whether p is a provider of the catalog.
func (p Provider) Known() bool {
	_, ok := providerNames[p]
	return ok
}

// DisplayName is the provider's name for people, e.g. "Cloudflare Sandbox".
func (p Provider) DisplayName() string {
	if n, ok := providerNames[p]; ok {
		return n
	}
	return string(p)
}

// The accounts a request object may name.
const (
	AccountKilo = "kilo"
	AccountBYOC = "byoc" // bring your own cloud: vercel only
)

// Resources are a sandbox's size; a nil member is unknown and shows as null.
type Resources struct {
	VCPUs     *int `json:"vcpus"`
	MemoryMiB *int `json:"memoryMiB"`
	DiskMB    *int `json:"diskMB"`
}

func res(vcpus, memoryMiB, diskMB int) Resources {
	r := Resources{VCPUs: &vcpus, MemoryMiB: &memoryMiB}
	if diskMB > 0 {
		r.DiskMB = &diskMB
	}
	return r
}

// CodeReviewResources are the resources of a code-review sandbox.
var CodeReviewResources = res(1, 4096, 8000)

// Spec is one named allocation of the catalog.
type Spec struct {
	Name         string
	Provider     Provider
	InstanceType string
	Resources    Resources
}

// The names of the catalog's allocations.
const (
	ContainersStandard4 = "cloudflare-containers-standard-4"
	ContainersStandard3 = "cloudflare-containers-standard-3"
	VercelSmall         = "vercel-small"
	VercelLarge         = "vercel-large"
	CloudflareSingle    = "cloudflare-single"
	IsolatedStandard    = "isolated-standard"
	CloudflareShared    = "cloudflare-shared"
)

// catalog lists every named allocation, in the contract's order. All of
// them are on the kilo account.
var catalog = []Spec{
	{ContainersStandard4, CloudflareContainers, "standard-4", res(4, 12288, 20000)},
	{ContainersStandard3, CloudflareContainers, "standard-3", res(2, 8192, 16000)},
	{VercelSmall, Vercel, "small", res(2, 4096, 0)},
	{VercelLarge, Vercel, "large", res(4, 8192, 0)},
	{CloudflareSingle, Cloudflare, "single", res(2, 6144, 10000)},
	{IsolatedStandard, Cloudflare, "isolated-standard", res(4, 12288, 20000)},
	{CloudflareShared, Cloudflare, "shared", Resources{}},
}

func lookup(name string) (Spec, bool) {
	for _, s := range catalog {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

func lookupRequest(p Provider, instanceType string) (Spec, bool) {
	for _, s := range catalog {
		if s.Provider == p && s.InstanceType == instanceType {
			return s, true
		}
	}
	return Spec{}, false
}

// Request is an allocation as a request object:
// {"provider":{"id":…,"account":…},"instanceType":…}.
type Request struct {
	Provider     RequestProvider `json:"provider"`
	InstanceType string          `json:"instanceType"`
}

// SavedView is a saved allocation (a trigger's, an environment's) as the
// API answers it: its byoc request object (req), its name, or nil (null)
// when none is saved.
func SavedView(name string, req *Request) any {
	switch {
	case req != nil:
		return *req
	case name != "":
		return name
	}
	return nil
}

// RequestProvider is the provider member of a request object.
type RequestProvider struct {
	ID      Provider `json:"id"`
	Account string   `json:"account"`
}

// Allocation is a valid allocation: a catalog entry on the kilo account, or
// a vercel bring-your-own-cloud request, which has no name. The zero value is
// no allocation.
type Allocation struct {
	spec Spec
	byoc bool
}

// IsZero reports whether a is no allocation.
func (a Allocation) IsZero() bool { return a.spec.Name == "" }

// Name is the allocation's catalog name, or "" for a byoc request.
func (a Allocation) Name() string {
	if a.byoc {
		return ""
	}
	return a.spec.Name
}

// BYOC reports whether a is a vercel bring-your-own-cloud request.
func (a Allocation) BYOC() bool { return a.byoc }

// Provider is the allocation's provider.
func (a Allocation) Provider() Provider { return a.spec.Provider }

// Resources are the allocation's resources.
func (a Allocation) Resources() Resources { return a.spec.Resources }

// Request is the request object the allocation stands for.
func (a Allocation) Request() Request {
	account := AccountKilo
	if a.byoc {
		account = AccountBYOC
	}
	return Request{RequestProvider{a.spec.Provider, account}, a.spec.InstanceType}
}

// String names the allocation for people and logs: its name, or
// vercel/byoc/<instanceType>.
func (a Allocation) String() string {
	if a.byoc {
		return string(Vercel) + "/" + AccountBYOC + "/" + a.spec.InstanceType
	}
	return a.spec.Name
}

// ByName returns the named allocation; ok is false for an unknown name.
func ByName(name string) (a Allocation, ok bool) {
	s, ok := lookup(name)
	return Allocation{spec: s}, ok
}

// FromRequest returns the allocation a request object stands for; ok is
// false unless it is one of the valid objects of the contract.
func FromRequest(r Request) (a Allocation, ok bool) {
	switch r.Provider.Account {
	case AccountKilo:
		s, ok := lookupRequest(r.Provider.ID, r.InstanceType)
		return Allocation{spec: s}, ok
	case AccountBYOC:
		if r.Provider.ID != Vercel {
			return Allocation{}, false
		}
		s, ok := lookupRequest(Vercel, r.InstanceType)
		return Allocation{spec: s, byoc: true}, ok
	}
	return Allocation{}, false
}

var errInvalidAllocation = problem.New(problem.InvalidSandboxAllocation,
	"The sandbox allocation must be one of the allocation names or a request object {\"provider\":{\"id\":…,\"account\":…},\"instanceType\":…} that names a known allocation.")

// Parse reads an allocation given in JSON as a name or a request object
// (check 1). A string or object that is not a valid allocation is
// invalid_sandbox_allocation; any other JSON type, or JSON that is not
// valid (repeated member names and invalid UTF-8 included), is
// invalid_request. Member names are matched exactly; extra members make the
// object invalid. A null member is one left out: callers drop it before
// they call Parse, which refuses it.
func Parse(raw jsontext.Value) (Allocation, error) {
	if !raw.IsValid() {
		return Allocation{}, problem.New(problem.InvalidRequest, "sandboxAllocation must be a well-formed string or object with unique member names.")
	}
	switch raw.Kind() {
	case '"':
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return Allocation{}, problem.New(problem.InvalidRequest, "sandboxAllocation is not valid JSON.")
		}
		if a, ok := ByName(name); ok {
			return a, nil
		}
		return Allocation{}, errInvalidAllocation
	case '{':
		r, ok := parseRequestObject(raw)
		if !ok {
			return Allocation{}, errInvalidAllocation
		}
		if a, ok := FromRequest(r); ok {
			return a, nil
		}
		return Allocation{}, errInvalidAllocation
	}
	return Allocation{}, problem.New(problem.InvalidRequest, "sandboxAllocation must be a string or an object.")
}

// requestObject is a request object as JSON has it: every member must be
// there, a string, and no other.
type requestObject struct {
	Provider *struct {
		ID      *string `json:"id"`
		Account *string `json:"account"`
	} `json:"provider"`
	InstanceType *string `json:"instanceType"`
}

// parseRequestObject decodes a request object whose members are exactly
// provider (an object of exactly id and account, both strings) and
// instanceType (a string).
func parseRequestObject(raw jsontext.Value) (Request, bool) {
	var o requestObject
	if json.Unmarshal(raw, &o, json.RejectUnknownMembers(true)) != nil ||
		o.Provider == nil || o.Provider.ID == nil || o.Provider.Account == nil || o.InstanceType == nil {
		return Request{}, false
	}
	return Request{Provider: RequestProvider{ID: Provider(*o.Provider.ID), Account: *o.Provider.Account}, InstanceType: *o.InstanceType}, true
}
