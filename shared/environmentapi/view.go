package environmentapi

import (
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/session"
)

// View is an environment as the API shows it: a secret's value is never
// answered (null), and a kilo allocation object comes back as its name.
type View struct {
	EnvironmentID     string                  `json:"environmentId"`
	OrgID             *string                 `json:"orgId"`
	Name              string                  `json:"name"`
	Description       *string                 `json:"description"`
	Default           bool                    `json:"default"`
	Variables         map[string]VariableView `json:"variables"`
	SetupCommands     []string                `json:"setupCommands"`
	SandboxAllocation any                     `json:"sandboxAllocation"` // a name, a byoc request object, or null
	CreatedAt         string                  `json:"createdAt"`
	UpdatedAt         string                  `json:"updatedAt"`
	Version           int                     `json:"version"`
}

// VariableView is a variable as answered: a plain value, or null for a
// secret one.
type VariableView struct {
	Value  *string `json:"value"`
	Secret bool    `json:"secret"`
}

func viewOf(e *environment.Environment, isDefault bool) View {
	v := View{
		EnvironmentID: e.ID, OrgID: httpapi.Nullable(e.OrgID), Name: e.Name, Description: httpapi.Nullable(e.Description),
		Default: isDefault, Variables: make(map[string]VariableView, len(e.Variables)), SetupCommands: e.SetupCommands,
		SandboxAllocation: allocation.SavedView(e.SavedAllocation, e.SavedRequest),
		CreatedAt:         e.CreatedAt.UTC().Format(session.TimeFormat), UpdatedAt: e.UpdatedAt.UTC().Format(session.TimeFormat),
		Version: e.Version,
	}
	if v.SetupCommands == nil {
		v.SetupCommands = []string{}
	}
	for name, x := range e.Variables {
		if x.Secret {
			v.Variables[name] = VariableView{Secret: true}
		} else {
			v.Variables[name] = VariableView{Value: &x.Value}
		}
	}
	return v
}
