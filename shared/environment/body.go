package environment

import (
	"encoding/json/jsontext"
	"maps"
	"slices"

	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/jsonbody"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// createBody is a POST /v1/environments body as JSON has it.
type createBody struct {
	OrgID             *string                  `json:"orgId"`
	Name              *string                  `json:"name"`
	Description       *string                  `json:"description"`
	Variables         map[string]*variableBody `json:"variables"`
	SetupCommands     []string                 `json:"setupCommands"`
	SandboxAllocation jsontext.Value           `json:"sandboxAllocation"`
	Default           *bool                    `json:"default"`
}

// variableBody is a variable as a body sends it.
type variableBody struct {
	Value  *string `json:"value"`
	Secret *bool   `json:"secret"`
}

// Create is a POST /v1/environments body, its content held to every rule
// (Check): the environment to create (its secrets in clear until they are
// sealed), the allocation as sent (nil for none), judged only after the
// org check, and whether it becomes its owner's default.
type Create struct {
	Environment
	Allocation jsontext.Value
	Default    bool
}

// ParseCreate reads and checks a POST /v1/environments body: the JSON
// strictly (jsonbody), its members' types and presence, then its content
// (Check); each fault is invalid_request naming the member.
func ParseCreate(body []byte) (*Create, error) {
	var b createBody
	if err := jsonbody.Decode(body, &b); err != nil {
		return nil, err
	}
	var m problem.Members
	c := &Create{}
	c.OrgID = m.Optional("orgId", b.OrgID)
	if c.OrgID != "" && !ids.IsID(c.OrgID) {
		m.Fail("orgId", "is not a valid id")
	}
	c.Name = m.Required("name", b.Name)
	c.Description = m.Optional("description", b.Description)
	c.Variables = map[string]Variable{}
	for _, name := range slices.Sorted(maps.Keys(b.Variables)) {
		v := b.Variables[name]
		if v == nil || v.Value == nil {
			m.Fail("variables."+name, "needs its value")
			continue
		}
		c.Variables[name] = Variable{Value: *v.Value, Secret: v.Secret != nil && *v.Secret}
	}
	c.SetupCommands = b.SetupCommands
	c.Allocation = jsonbody.NameOrObject(&m, "sandboxAllocation", b.SandboxAllocation)
	c.Default = b.Default != nil && *b.Default
	if err := m.Err(); err != nil {
		return nil, err
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c, nil
}
