package allocation

import (
	"fmt"
	"slices"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// Built-in settings (section 7 of the contract): the one source of the
// value each setting takes when it is not set (BuiltinConfig).
const (
	BuiltinDefault = ContainersStandard4
	// allOwners in the selection owners setting lets every owner select.
	allOwners = "*"
)

var (
	builtinSelectable         = []string{ContainersStandard3, ContainersStandard4, VercelSmall, VercelLarge}
	builtinRetiredAllocations = []string{CloudflareShared}
	builtinRetiredProviders   = []Provider{Cloudflare}
	// neverSelectable may never be selected, whatever the settings say.
	neverSelectable = []string{IsolatedStandard, CloudflareShared}
)

// Config is the raw allocation settings. A nil member was not set and takes
// its built-in value; an empty, non-nil list is set to empty.
type Config struct {
	Default            *string
	Selectable         []string
	RetiredAllocations []string
	RetiredProviders   []string
	SelectionOwners    []string
}

// BuiltinConfig is every setting at its built-in value: the policy of it is
// DefaultPolicy's. The retired lists add nothing to the built-in retired
// sets, which no setting can take an entry out of.
func BuiltinConfig() Config {
	d := BuiltinDefault
	return Config{
		Default:            &d,
		Selectable:         slices.Clone(builtinSelectable),
		RetiredAllocations: []string{},
		RetiredProviders:   []string{},
		SelectionOwners:    []string{allOwners},
	}
}

// Policy is the validated allocation settings: which allocations and
// providers are retired, which may be selected, by whom, and the default.
// It is immutable and safe for concurrent use.
type Policy struct {
	configuredDefault  string
	selectable         map[string]bool
	retiredAllocations map[string]bool
	retiredProviders   map[Provider]bool
	owners             map[string]bool
	// The effective default, worked out once.
	effectiveDefault Allocation
	defaultErr       error
}

// NewPolicy validates a Config. Values naming an unknown allocation or
// provider, and selectable entries that may never be selected, are ignored;
// each is reported in warnings for the log. Settings can add to the retired
// sets but never take a built-in entry out of them.
func NewPolicy(c Config) (p *Policy, warnings []string) {
	p = &Policy{
		configuredDefault:  BuiltinDefault,
		selectable:         map[string]bool{},
		retiredAllocations: map[string]bool{},
		retiredProviders:   map[Provider]bool{},
		owners:             map[string]bool{},
	}
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }

	if c.Default != nil {
		if _, ok := lookup(*c.Default); !ok || slices.Contains(neverSelectable, *c.Default) {
			warn("allocation/default: %q is not an allocation that can be the default; using %s", *c.Default, BuiltinDefault)
		} else {
			p.configuredDefault = *c.Default
		}
	}
	selectable := builtinSelectable
	if c.Selectable != nil {
		selectable = c.Selectable
	}
	for _, name := range selectable {
		switch _, ok := lookup(name); {
		case !ok:
			warn("allocation/selectable: unknown allocation %q ignored", name)
		case slices.Contains(neverSelectable, name):
			warn("allocation/selectable: %q can never be selected; ignored", name)
		default:
			p.selectable[name] = true
		}
	}
	for _, name := range append(slices.Clone(builtinRetiredAllocations), c.RetiredAllocations...) {
		if _, ok := lookup(name); !ok {
			warn("allocation/retired: unknown allocation %q ignored", name)
			continue
		}
		p.retiredAllocations[name] = true
	}
	for _, b := range builtinRetiredProviders {
		p.retiredProviders[b] = true
	}
	for _, id := range c.RetiredProviders {
		if !Provider(id).Known() {
			warn("provider/retired: unknown provider %q ignored", id)
			continue
		}
		p.retiredProviders[Provider(id)] = true
	}
	owners := c.SelectionOwners
	if owners == nil {
		owners = []string{allOwners}
	}
	for _, o := range owners {
		p.owners[o] = true
	}
	p.effectiveDefault, p.defaultErr = p.workOutDefault()
	return p, warnings
}

// DefaultPolicy is the policy of the built-in settings.
func DefaultPolicy() *Policy {
	p, _ := NewPolicy(Config{})
	return p
}

// AllocationRetired reports whether a is a retired allocation. A byoc
// request has no name and is never a retired allocation (check 3).
func (p *Policy) AllocationRetired(a Allocation) bool {
	return !a.byoc && p.retiredAllocations[a.spec.Name]
}

// ProviderRetired reports whether the provider is retired.
func (p *Policy) ProviderRetired(id Provider) bool { return p.retiredProviders[id] }

// Retired reports whether a cannot start sessions: the allocation or its
// provider is retired.
func (p *Policy) Retired(a Allocation) bool {
	return p.AllocationRetired(a) || p.retiredProviders[a.spec.Provider]
}

// Default returns the effective default: the configured default unless it is
// retired or on a retired provider, then the built-in default. When that is
// unusable too, the error is service_unavailable and its cause says why.
func (p *Policy) Default() (Allocation, error) { return p.effectiveDefault, p.defaultErr }

func (p *Policy) workOutDefault() (Allocation, error) {
	a, _ := ByName(p.configuredDefault)
	if !p.Retired(a) {
		return a, nil
	}
	b, _ := ByName(BuiltinDefault)
	if !p.Retired(b) {
		return b, nil
	}
	return Allocation{}, problem.Wrap(problem.ServiceUnavailable, "No sandbox allocation is available for new sessions right now.",
		fmt.Errorf("the configured default %s and the built-in default %s are both retired or on a retired provider", a, b))
}

func (p *Policy) isDefault(a Allocation) bool {
	d, err := p.Default()
	return err == nil && d.spec.Name == a.spec.Name
}

// Owner is who a start or a trigger selects for (checks 5 and 6): the org
// when there is one, else the user.
func Owner(userID, orgID string) string {
	if orgID != "" {
		return orgID
	}
	return userID
}

// MaySelect reports whether the owner (the org when there is one, else the
// user) may select allocations (check 5).
func (p *Policy) MaySelect(owner string) bool {
	return p.owners[allOwners] || p.owners[owner]
}

// Check runs checks 3 to 6 of the contract, in order, on an explicit
// allocation for the owner: retired allocation, retired provider, selection
// not enabled for the owner, not selectable. Naming the effective default
// skips checks 5 and 6; a byoc request follows vercel-<instanceType> there.
func (p *Policy) Check(a Allocation, owner string) error {
	if err := p.Retirement(a, a.Provider(), false).Err(NewStart); err != nil {
		return err
	}
	switch {
	case p.isDefault(a):
		return nil
	case !p.MaySelect(owner):
		return problem.New(problem.SandboxSelectionDisabled, "Sandbox selection is not enabled for this owner")
	case !p.selectable[a.spec.Name]:
		return problem.New(problem.SandboxAllocationUnavailable, fmt.Sprintf(
			"The %s sandbox allocation is not available for selection. Start the session without an allocation to use the default, or choose one of the allocations listed by GET /v1/allocations.", a))
	}
	return nil
}

// CheckRouting is check 2: an explicit allocation cannot be combined with
// the code-review kind.
func CheckRouting(a Allocation, k Kind) error {
	if !a.IsZero() && k == KindCodeReview {
		return problem.New(problem.AllocationRoutingConflict, "Sandbox allocations cannot be combined with specialized sandbox routing")
	}
	return nil
}

// Placement is where a new session's sandbox goes.
type Placement struct {
	Kind       Kind
	Provider   Provider
	Allocation Allocation // zero for code-review
	Resources  Resources
}

// Place decides the sandbox of a new session from the requested kind and
// allocation (zero when none was given), after checks 1 and 2 have passed:
// check 2 holds again, the shared kind is retired (judged as check 3), an explicit allocation
// runs checks 3 to 6, no allocation takes the effective default, and
// code-review takes the default's provider with its own resources and no
// allocation.
func (p *Policy) Place(k Kind, a Allocation, owner string) (Placement, error) {
	if err := CheckRouting(a, k); err != nil {
		return Placement{}, err
	}
	if k == KindShared {
		return Placement{}, p.Retirement(Allocation{}, "", true).Err(NewStart)
	}
	if !a.IsZero() {
		if err := p.Check(a, owner); err != nil {
			return Placement{}, err
		}
		return Placement{KindIsolated, a.Provider(), a, a.Resources()}, nil
	}
	d, err := p.Default()
	if err != nil {
		return Placement{}, err
	}
	if k == KindCodeReview {
		return Placement{KindCodeReview, d.Provider(), Allocation{}, CodeReviewResources}, nil
	}
	return Placement{KindIsolated, d.Provider(), d, d.Resources()}, nil
}

// FallbackClass is why a saved allocation does not run: the classes of
// the audit's trigger report (contract section 8).
type FallbackClass string

// The fallback classes; "" means the saved allocation runs.
const (
	// FallbackUnknown is a saved name or request that is no allocation.
	FallbackUnknown FallbackClass = "unknown"
	// FallbackRetired fails check 3: the allocation is retired.
	FallbackRetired FallbackClass = "retired"
	// FallbackProviderRetired fails check 4: its provider is retired.
	FallbackProviderRetired FallbackClass = "providerRetired"
	// FallbackNotSelectable fails check 5 or 6: the owner may not select
	// it, or it is not in the selectable list.
	FallbackNotSelectable FallbackClass = "notSelectable"
)

// Fallback says why a saved allocation falls back to the effective
// default: its class and, for the log, the reason. The zero Fallback is
// none.
type Fallback struct {
	Class  FallbackClass
	Reason string
}

// Choice is the policy's decision about a saved allocation (a stored
// trigger's), made once, by Resolve: what a new session starts with, and
// whether it falls back.
type Choice struct {
	// Start is the allocation a new session is started with: the saved
	// one when it passes checks 3 to 6, else zero, for the effective
	// default, as a start without an allocation has it.
	Start Allocation
	// Saved is the saved allocation; zero when none was saved, or when
	// what was saved is no allocation.
	Saved Allocation
	// Fallback says why the saved allocation does not run; zero when it
	// runs, or none was saved.
	Fallback Fallback
}

// FellBack reports whether a new session falls back: something was
// saved, and it does not run.
func (c Choice) FellBack() bool { return c.Fallback.Class != "" }

// Ran reports whether a session that runs on a (zero when it has none)
// ran as its trigger saved: on the saved allocation, or, when none was
// saved, on whatever it runs. What was saved and is no allocation never
// ran.
func (c Choice) Ran(a Allocation) bool {
	if c.Saved.IsZero() {
		return !c.FellBack()
	}
	return c.Saved.String() == a.String()
}

// Resolve decides a saved allocation, given as the stored name or request
// object (both empty: none). Saved values are never errors: an unknown
// value, or one that fails checks 3 to 6, falls back to the effective
// default, and the Fallback says why. The error is only the effective
// default's, when a new session would need it.
func (p *Policy) Resolve(name string, req *Request, owner string) (Choice, error) {
	var c Choice
	var a Allocation
	var ok bool
	switch {
	case req != nil:
		if a, ok = FromRequest(*req); !ok {
			// The reason goes to the log: it never repeats a stored value
			// that is no allocation.
			c.Fallback = Fallback{FallbackUnknown, "the saved allocation request is not a valid allocation"}
		}
	case name != "":
		if a, ok = ByName(name); !ok {
			c.Fallback = Fallback{FallbackUnknown, "the saved allocation is not a known allocation"}
		}
	}
	if ok {
		c.Saved = a
		cerr := p.Check(a, owner)
		if cerr == nil {
			c.Start = a
			return c, nil
		}
		code := problem.CodeOf(cerr)
		c.Fallback = Fallback{fallbackClasses[code], fmt.Sprintf("saved allocation %s fails its checks: %s", a, code)}
	}
	_, err := p.Default()
	return c, err
}

// Saved is Resolve's decision as the allocation a new session runs on
// (the effective default when it falls back, or none was saved) and why
// it falls back: the audit's report of triggers that fall back.
func (p *Policy) Saved(name string, req *Request, owner string) (Allocation, Fallback, error) {
	c, err := p.Resolve(name, req, owner)
	if err != nil || !c.Start.IsZero() {
		return c.Start, c.Fallback, err
	}
	d, err := p.Default()
	return d, c.Fallback, err
}

// fallbackClasses are the classes of the codes of checks 3 to 6.
var fallbackClasses = map[problem.Code]FallbackClass{
	problem.SandboxAllocationRetired:     FallbackRetired,
	problem.SandboxRuntimeRetired:        FallbackProviderRetired,
	problem.SandboxSelectionDisabled:     FallbackNotSelectable,
	problem.SandboxAllocationUnavailable: FallbackNotSelectable,
}

// Option is one allocation a caller may select.
type Option struct {
	Allocation string    `json:"allocation"`
	Provider   Provider  `json:"provider"`
	Resources  Resources `json:"resources"`
}

// Options is what an owner may select (GET /v1/allocations).
type Options struct {
	Enabled bool     `json:"enabled"`
	Default *string  `json:"default"`
	Options []Option `json:"options"`
	BYOC    bool     `json:"byoc"`
	Retired []string `json:"retired"`
}

// OptionsFor lists what the owner may select, in catalog order: the named
// allocations that pass checks 3 to 6 (the effective default always among
// them) when the owner may select, none when it may not; whether a byoc
// request of some instance type would pass; and every allocation that is
// retired or on a retired provider. When no default is usable, default is
// null: the listing still answers, and starts that need the default are 503.
func (p *Policy) OptionsFor(owner string) Options {
	o := Options{Enabled: p.MaySelect(owner), Options: []Option{}, Retired: []string{}}
	if d, err := p.Default(); err == nil {
		name := d.Name()
		o.Default = &name
	}
	for _, s := range catalog {
		if s.Provider == Vercel {
			b, _ := FromRequest(Request{RequestProvider{Vercel, AccountBYOC}, s.InstanceType})
			o.BYOC = o.BYOC || p.Check(b, owner) == nil
		}
		a := Allocation{spec: s}
		switch {
		case p.Retired(a):
			o.Retired = append(o.Retired, s.Name)
		case o.Enabled && p.Check(a, owner) == nil:
			o.Options = append(o.Options, Option{s.Name, s.Provider, s.Resources})
		}
	}
	return o
}
