// Package settings reads the settings from SSM Parameter Store
// (GetParametersByPath under CONFIG_PATH), validates them into an
// allocation.Policy, a webhook trigger's deliveries per minute and the
// time after which a session with no outcome is marked timed_out, and
// caches them per execution environment for
// CONFIG_TTL_SECONDS with jitter. A failed refresh keeps the last good
// settings; when none were ever loaded the caller gets service_unavailable.
// The same parameters can sit in a settings file (ReadFile), the local
// stack's stand-in for Parameter Store.
package settings

import (
	"context"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// DefaultTTL is how long settings are cached when CONFIG_TTL_SECONDS is not
// set.
const DefaultTTL = 60 * time.Second

// The parameters, relative to the configuration path.
const (
	paramDefault            = "allocation/default"
	paramSelectable         = "allocation/selectable"
	paramRetiredAllocations = "allocation/retired"
	paramRetiredProviders   = "provider/retired"
	paramSelectionOwners    = "selection/owners"
	paramDeliveries         = "webhook/deliveries-per-minute"
	paramOutcomeTimeout     = "outcome/timeout-minutes"
)

// BuiltinDeliveriesPerMinute is the built-in value of
// webhook/deliveries-per-minute: how many new starts a webhook trigger's
// deliveries may make in one minute. A value must be a whole number from 1
// to MaxDeliveriesPerMinute.
const (
	BuiltinDeliveriesPerMinute = 60
	MaxDeliveriesPerMinute     = 10000
)

// BuiltinOutcomeTimeoutMinutes is the built-in value of
// outcome/timeout-minutes: how long after its start or its last heartbeat
// a session with no outcome is marked timed_out. A value must be a whole
// number from 1 to MaxOutcomeTimeoutMinutes (a week).
const (
	BuiltinOutcomeTimeoutMinutes = 180
	MaxOutcomeTimeoutMinutes     = 10080
)

// emptyList is the StringList value that means an empty list (SSM cannot
// store an empty value).
const emptyList = "-"

// ParseTTL reads CONFIG_TTL_SECONDS: a whole number of seconds, at least 1;
// empty means DefaultTTL.
func ParseTTL(s string) (time.Duration, error) {
	if s == "" {
		return DefaultTTL, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("CONFIG_TTL_SECONDS must be a whole number of seconds, at least 1: %q", s)
	}
	return time.Duration(n) * time.Second, nil
}

// Settings is the cached settings of one configuration path.
type Settings struct {
	client *ssm.Client
	path   string
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	current *snapshot
	refresh time.Time
}

// snapshot is the settings as one read gave them.
type snapshot struct {
	policy     *allocation.Policy
	deliveries int
	timeout    time.Duration
}

// New returns the settings under path (e.g. /cloud-agent/dev), read with
// client and cached for ttl.
func New(client *ssm.Client, path string, ttl time.Duration) *Settings {
	return &Settings{client: client, path: strings.TrimSuffix(path, "/"), ttl: ttl, now: time.Now}
}

// Policy returns the current policy, reading the parameters when the cache
// has expired. A failed read keeps the last good policy; with none, the
// error is service_unavailable.
func (s *Settings) Policy(ctx context.Context) (*allocation.Policy, error) {
	v, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return v.policy, nil
}

// Saved is an allocation sent to be saved (a trigger's, an
// environment's), judged as a saved one is at creation: parsed (check 1)
// and held to the policy for owner (checks 3 to 6); its saved form is a
// name, or a byoc request object.
func (s *Settings) Saved(ctx context.Context, raw jsontext.Value, owner string) (name string, req *allocation.Request, err error) {
	a, err := allocation.Parse(raw)
	if err != nil {
		return "", nil, err
	}
	policy, err := s.Policy(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := policy.Check(a, owner); err != nil {
		return "", nil, err
	}
	if a.BYOC() {
		ar := a.Request()
		return "", &ar, nil
	}
	return a.Name(), nil, nil
}

// DeliveriesPerMinute returns webhook/deliveries-per-minute as Policy
// returns the policy: from the same read.
func (s *Settings) DeliveriesPerMinute(ctx context.Context) (int, error) {
	v, err := s.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return v.deliveries, nil
}

// OutcomeTimeout returns outcome/timeout-minutes as Policy returns the
// policy: from the same read.
func (s *Settings) OutcomeTimeout(ctx context.Context) (time.Duration, error) {
	v, err := s.snapshot(ctx)
	if err != nil {
		return 0, err
	}
	return v.timeout, nil
}

func (s *Settings) snapshot(ctx context.Context) (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.current != nil && now.Before(s.refresh) {
		return s.current, nil
	}
	v, err := s.load(ctx)
	// Jitter spreads the refreshes of many execution environments.
	s.refresh = now.Add(s.ttl + rand.N(s.ttl/10+1))
	switch {
	case err == nil:
		s.current = v
	case s.current != nil:
		invocation.Warn(ctx, "settings refresh failed; keeping the last good settings: "+err.Error())
	default:
		return nil, problem.Wrap(problem.ServiceUnavailable, "The service is temporarily unavailable. Try again shortly.", err)
	}
	return s.current, nil
}

func (s *Settings) load(ctx context.Context) (*snapshot, error) {
	values := map[string]string{}
	pages := ssm.NewGetParametersByPathPaginator(s.client, &ssm.GetParametersByPathInput{
		Path: aws.String(s.path), Recursive: aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading settings under %s: %w", s.path, err)
		}
		for _, p := range page.Parameters {
			values[strings.TrimPrefix(aws.ToString(p.Name), s.path+"/")] = aws.ToString(p.Value)
		}
	}
	return &snapshot{
		policy:     policyOf(ctx, values),
		deliveries: wholeOf(ctx, values, paramDeliveries, BuiltinDeliveriesPerMinute, MaxDeliveriesPerMinute),
		timeout:    time.Duration(wholeOf(ctx, values, paramOutcomeTimeout, BuiltinOutcomeTimeoutMinutes, MaxOutcomeTimeoutMinutes)) * time.Minute,
	}, nil
}

// wholeOf is the parameter name of the parameter values, a whole number
// from 1 to most: builtin when it is not set, or not such a number (a
// warning of ctx's invocation then).
func wholeOf(ctx context.Context, values map[string]string, name string, builtin, most int) int {
	v, ok := values[name]
	if !ok {
		return builtin
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > most {
		invocation.Warn(ctx, fmt.Sprintf("setting ignored: %s must be a whole number from 1 to %d", name, most))
		return builtin
	}
	return n
}

// policyOf is the policy of the parameter values, keyed by their name
// relative to the path; each value it ignores is a warning of ctx's
// invocation.
func policyOf(ctx context.Context, values map[string]string) *allocation.Policy {
	policy, warnings := allocation.NewPolicy(Config(values))
	for _, w := range warnings {
		invocation.Warn(ctx, "setting ignored: "+w)
	}
	return policy
}

// Parameter is one setting in a settings file, named relative to the
// configuration path (e.g. "allocation/default").
type Parameter struct {
	Name  string `json:"name"`
	Type  string `json:"type"` // String or StringList
	Value string `json:"value"`
}

// ReadFile reads a settings file: a JSON array of Parameters. A missing
// file holds no parameter. Member names match whatever their case (a
// file edited by hand may spell them "Name", "Type" and "Value").
func ReadFile(name string) ([]Parameter, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var params []Parameter
	if err := json.Unmarshal(data, &params, json.MatchCaseInsensitiveNames(true)); err != nil {
		return nil, fmt.Errorf("the settings file %s: %w", name, err)
	}
	return params, nil
}

// FilePolicy is the policy of the settings file name, as the functions
// would read the same parameters from Parameter Store (a missing file is
// the built-in settings); each value it ignores is a warning of ctx's
// invocation.
func FilePolicy(ctx context.Context, name string) (*allocation.Policy, error) {
	params, err := ReadFile(name)
	if err != nil {
		return nil, err
	}
	values := make(map[string]string, len(params))
	for _, p := range params {
		values[p.Name] = p.Value
	}
	return policyOf(ctx, values), nil
}

// Config turns parameter values, keyed by their name relative to the path,
// into an allocation.Config. A missing parameter stays unset (its built-in
// value applies); a StringList of "-" is empty.
func Config(values map[string]string) allocation.Config {
	var c allocation.Config
	if v, ok := values[paramDefault]; ok {
		v = strings.TrimSpace(v)
		c.Default = &v
	}
	list := func(name string) []string {
		v, ok := values[name]
		if !ok {
			return nil
		}
		out := []string{}
		if strings.TrimSpace(v) == emptyList {
			return out
		}
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		return out
	}
	c.Selectable = list(paramSelectable)
	c.RetiredAllocations = list(paramRetiredAllocations)
	c.RetiredProviders = list(paramRetiredProviders)
	c.SelectionOwners = list(paramSelectionOwners)
	return c
}

// Builtin is every parameter at its built-in value
// (allocation.BuiltinConfig, BuiltinDeliveriesPerMinute,
// BuiltinOutcomeTimeoutMinutes), as Parameter
// Store holds it: the parameters
// of template.yaml, which the stack owns, are these (a test of
// infra/template holds them to it).
func Builtin() []Parameter {
	c := allocation.BuiltinConfig()
	list := func(items []string) string {
		if len(items) == 0 {
			return emptyList
		}
		return strings.Join(items, ",")
	}
	return []Parameter{
		{Name: paramDefault, Type: "String", Value: *c.Default},
		{Name: paramSelectable, Type: "StringList", Value: list(c.Selectable)},
		{Name: paramRetiredAllocations, Type: "StringList", Value: list(c.RetiredAllocations)},
		{Name: paramRetiredProviders, Type: "StringList", Value: list(c.RetiredProviders)},
		{Name: paramSelectionOwners, Type: "StringList", Value: list(c.SelectionOwners)},
		{Name: paramDeliveries, Type: "String", Value: strconv.Itoa(BuiltinDeliveriesPerMinute)},
		{Name: paramOutcomeTimeout, Type: "String", Value: strconv.Itoa(BuiltinOutcomeTimeoutMinutes)},
	}
}
