package template

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/global"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/cloud-agent/control-plane/shared/settings"
)

// Template is a parsed SAM template. Its functions' events are kept as
// written too: goformation's typed events drop the properties they do not
// know (a Schedule's RetryPolicy, say), and the event with them.
type Template struct {
	*cloudformation.Template
	events map[string]map[string]rawEvent // by function, by event name
}

type rawEvent struct {
	Type       string
	Properties json.RawMessage
}

// processing serializes goformation's intrinsics.ProcessYAML: every call
// registers its YAML tag resolvers in one package-level map, so two at
// once are a data race.
var processing sync.Mutex

// processYAML is goformation's intrinsics.ProcessYAML, one call at a time:
// every caller of it in this module goes through here.
func processYAML(data []byte, opts *intrinsics.ProcessorOptions) ([]byte, error) {
	processing.Lock()
	defer processing.Unlock()
	return intrinsics.ProcessYAML(data, opts)
}

// Load reads and parses a SAM template. Intrinsics resolve as they
// do locally: parameters take their defaults, and a Ref to a resource, or
// to a function's alias (<LogicalId>.Alias), is the resource's logical id
// (locally, the table is named after its resource).
func Load(path string) (*Template, error) { return LoadWith(path, nil) }

// LoadWith is Load with the parameters params over their defaults: each
// must be a parameter of the template, with one of its allowed values when
// it lists them.
func LoadWith(path string, params map[string]string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	overrides := map[string]any{}
	for k, v := range params {
		overrides[k] = v
	}
	var resources map[string]bool
	resolved, err := processYAML(data, &intrinsics.ProcessorOptions{
		ParameterOverrides: overrides,
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref": func(name string, input, template any) any {
				if id, ok := input.(string); ok {
					if resources == nil {
						resources = resourceIDs(template)
					}
					if fn, ok := strings.CutSuffix(id, ".Alias"); ok && resources[fn] {
						return fn
					}
					if resources[id] {
						return id
					}
				}
				return intrinsics.Ref(name, input, template)
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	t, err := goformation.ParseJSON(resolved)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	for k, v := range params {
		p, ok := t.Parameters[k]
		if !ok {
			return nil, fmt.Errorf("%s has no parameter %s", path, k)
		}
		if p.AllowedValues != nil && !slices.Contains(p.AllowedValues, any(v)) {
			return nil, fmt.Errorf("%s: %s must be one of %v, not %q", path, k, p.AllowedValues, v)
		}
	}
	var raw struct {
		Resources map[string]struct {
			Properties struct{ Events map[string]rawEvent }
		}
	}
	if err := json.Unmarshal(resolved, &raw); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	tpl := &Template{Template: t, events: map[string]map[string]rawEvent{}}
	for id, r := range raw.Resources {
		tpl.events[id] = r.Properties.Events
	}
	return tpl, nil
}

func resourceIDs(template any) map[string]bool {
	ids := map[string]bool{}
	if t, ok := template.(map[string]any); ok {
		if rs, ok := t["Resources"].(map[string]any); ok {
			for id := range rs {
				ids[id] = true
			}
		}
	}
	return ids
}

// Function is a function of the template as the local stack runs it.
type Function struct {
	LogicalID     string
	BuildMethod   string
	Runtime       string
	Handler       string
	Architectures []string
	Timeout       time.Duration // 3 seconds when the template says nothing, as in Lambda
	MemoryMB      int           // 128 when the template says nothing, as in Lambda
	// Environment holds the Globals' variables overlaid with the function's.
	Environment map[string]string
	Routes      []Route
	// Schedules are the rules that invoke the function on a schedule,
	// sorted by logical id.
	Schedules []Schedule
}

// Schedule is an AWS::Events::Rule of the template that invokes a
// function on a schedule: one that exists with the template's parameters
// (its Condition holds), ENABLED, one of whose targets is the function or
// its alias by Ref.
type Schedule struct {
	ID         string // the rule's logical id
	Expression string // rate(...) or cron(...)
	// Input is the target's InputTransformer, when it has one: what the
	// function receives instead of the Scheduled Event.
	Input *Input
}

// Input is a rule target's InputTransformer: the placeholders <name> of
// Template are filled with the event's values at the JSON paths of Paths.
type Input struct {
	Paths    map[string]string
	Template string
}

// Route is an HttpApi event: a method (or ANY) and a path whose {name}
// segments are path parameters; JWT is false when the route opts out of
// the API's authorizer.
type Route struct {
	Function string
	Method   string
	Path     string
	JWT      bool
}

// Key is the route key as API Gateway writes it, e.g. "GET /v1/allocations".
func (r Route) Key() string { return r.Method + " " + r.Path }

// eventProperties is what the local stack reads of an event's properties.
type eventProperties struct {
	Method string
	Path   string
	Auth   *struct{ Authorizer string }
}

// LoadFunctions reads the SAM template at path and lists its functions
// (Load, then Functions).
func LoadFunctions(path string) ([]Function, error) {
	t, err := Load(path)
	if err != nil {
		return nil, err
	}
	return Functions(t)
}

// Routes are the routes of every function, as the template's one HTTP API
// serves them.
func Routes(fns []Function) []Route {
	var routes []Route
	for _, fn := range fns {
		routes = append(routes, fn.Routes...)
	}
	return routes
}

// Functions lists the template's AWS::Serverless::Function resources,
// sorted by logical id.
func Functions(t *Template) ([]Function, error) {
	var g global.Function
	if gf, ok := t.Globals["Function"].(*global.Function); ok {
		g = *gf
	}
	var out []Function
	for id, f := range t.GetAllServerlessFunctionResources() {
		fn := Function{LogicalID: id, Environment: map[string]string{}}
		fn.BuildMethod, _ = f.AWSCloudFormationMetadata["BuildMethod"].(string)
		fn.Runtime = first(f.Runtime, g.Runtime)
		fn.Handler = first(f.Handler, g.Handler)
		fn.Timeout = time.Duration(firstInt(f.Timeout, g.Timeout, 3)) * time.Second
		fn.MemoryMB = firstInt(f.MemorySize, g.MemorySize, 128)
		switch {
		case f.Architectures != nil:
			fn.Architectures = f.Architectures
		case g.Architectures != nil:
			fn.Architectures = *g.Architectures
		}
		if g.Environment != nil {
			for k, v := range g.Environment.Variables {
				fn.Environment[k] = v
			}
		}
		if f.Environment != nil {
			for k, v := range f.Environment.Variables {
				fn.Environment[k] = v
			}
		}
		for name, ev := range t.events[id] {
			var p eventProperties
			if err := json.Unmarshal(ev.Properties, &p); err != nil {
				return nil, fmt.Errorf("%s event %s: %w", id, name, err)
			}
			switch ev.Type {
			case "HttpApi":
				if p.Path == "" || p.Method == "" || strings.Contains(strings.TrimSuffix(p.Path, "+}"), "+}") {
					return nil, fmt.Errorf("%s event %s: the local gateway serves explicit methods and paths, a greedy {name+} segment only at their end", id, name)
				}
				fn.Routes = append(fn.Routes, Route{id, p.Method, p.Path, p.Auth == nil || p.Auth.Authorizer != "NONE"})
			case "Schedule":
				return nil, fmt.Errorf("%s event %s: the local stack runs the schedules written as AWS::Events::Rule resources, not SAM Schedule events", id, name)
			}
		}
		sort.Slice(fn.Routes, func(i, j int) bool { return fn.Routes[i].Key() < fn.Routes[j].Key() })
		fn.Schedules = schedules(t, id)
		out = append(out, fn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out, nil
}

// schedules are the template's schedules of the function id (Schedule),
// sorted by logical id.
func schedules(t *Template, id string) []Schedule {
	var out []Schedule
	for rid, r := range t.GetAllEventsRuleResources() {
		if c := r.AWSCloudFormationCondition; c != "" && t.Conditions[c] != true || r.ScheduleExpression == nil || aws.ToString(r.State) != "ENABLED" {
			continue
		}
		for _, tg := range r.Targets {
			if tg.Arn != id {
				continue
			}
			s := Schedule{ID: rid, Expression: *r.ScheduleExpression}
			if it := tg.InputTransformer; it != nil {
				s.Input = &Input{Paths: it.InputPathsMap, Template: it.InputTemplate}
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func firstInt(a, b *int, def int) int {
	switch {
	case a != nil:
		return *a
	case b != nil:
		return *b
	}
	return def
}

func first(a, b *string) string {
	switch {
	case a != nil:
		return *a
	case b != nil:
		return *b
	}
	return ""
}

// Settings is the template's SSM parameters under configPath, named
// relative to it: the settings a new local settings file starts with.
func Settings(t *Template, configPath string) []settings.Parameter {
	var out []settings.Parameter
	for _, p := range t.GetAllSSMParameterResources() {
		if p.Name == nil {
			continue
		}
		if name, ok := strings.CutPrefix(*p.Name, configPath+"/"); ok {
			out = append(out, settings.Parameter{Name: name, Type: p.Type, Value: p.Value})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
