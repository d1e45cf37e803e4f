package runtimeapi

import (
	"context"
	"maps"
	"net/http"
	"slices"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

// LaunchView is what a session was started with, as the launch read
// answers it.
type LaunchView struct {
	SessionID         string                 `json:"sessionId"`
	Owner             session.OwnerView      `json:"owner"`
	CreatedOnPlatform *string                `json:"createdOnPlatform"`
	CreatedAt         *string                `json:"createdAt"`
	Repository        session.RepositoryView `json:"repository"`
	Agent             session.AgentView      `json:"agent"`
	InitialTurn       TurnView               `json:"initialTurn"`
	Sandbox           session.SandboxView    `json:"sandbox"`
	Environment       *EnvironmentView       `json:"environment"`
	Trigger           *session.TriggerView   `json:"trigger"`
	Claim             *session.ClaimView     `json:"claim"`
	Outcome           *session.OutcomeView   `json:"outcome"`
}

// TurnView is a session's first turn: its prompt, null when none was
// given.
type TurnView struct {
	Prompt *string `json:"prompt"`
}

// EnvironmentView is the environment a session was started in, as it was
// then: plain values in clear, secret ones as the ciphertext the
// execution plane decrypts with its own permission.
type EnvironmentView struct {
	ID            string                  `json:"environmentId"`
	Name          string                  `json:"name"`
	Version       int                     `json:"version"`
	Variables     map[string]VariableView `json:"variables"`
	SetupCommands []string                `json:"setupCommands"`
}

// VariableView is a variable: {"value"} for a plain one; for a secret
// one its ciphertext, the key's ARN and the encryption context that
// KMS Decrypt needs.
type VariableView struct {
	Value             *string           `json:"value,omitempty"`
	Ciphertext        []byte            `json:"ciphertext,omitempty"`
	KeyID             string            `json:"keyId,omitempty"`
	EncryptionContext map[string]string `json:"encryptionContext,omitempty"`
}

// launch answers what the session was started with; a session on a
// retired runtime or allocation is 422, as everywhere: nothing may run
// it.
func (s *Service) launch(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
	rec, _, err := s.authorized(ctx, r, s.Table.ReadLaunch)
	if err != nil {
		return httpapi.Response{}, err
	}
	policy, err := s.Settings.Policy(ctx)
	if err != nil {
		return httpapi.Response{}, err
	}
	if rt := policy.Retirement(rec.Allocation(), rec.Sandbox.Provider, false).Runtime(); rt.State == allocation.StateRetired {
		return httpapi.Response{}, problem.New(*rt.Code, *rt.Message)
	}
	return httpapi.Response{Status: http.StatusOK, Body: s.viewOf(rec)}, nil
}

func (s *Service) viewOf(rec *session.Record) LaunchView {
	v := LaunchView{
		SessionID: rec.SessionID, Owner: rec.OwnerView(), CreatedOnPlatform: httpapi.Nullable(rec.CreatedOnPlatform),
		Repository: rec.Repository.View(), Agent: rec.Agent.View(), Sandbox: rec.SandboxView(),
		Trigger: rec.TriggerView(), Claim: session.ClaimOf(rec.Claim), Outcome: session.OutcomeOf(rec.Outcome),
	}
	if !rec.CreatedAt.IsZero() {
		v.CreatedAt = httpapi.Nullable(rec.CreatedAt.UTC().Format(session.TimeFormat))
	}
	if l := rec.Launch; l != nil {
		v.InitialTurn.Prompt = l.Prompt
		v.Environment = s.environmentOf(l.Environment)
	}
	return v
}

func (s *Service) environmentOf(e *environment.Environment) *EnvironmentView {
	if e == nil {
		return nil
	}
	v := &EnvironmentView{ID: e.ID, Name: e.Name, Version: e.Version, Variables: map[string]VariableView{}, SetupCommands: e.SetupCommands}
	if v.SetupCommands == nil {
		v.SetupCommands = []string{}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Variables)) {
		x := e.Variables[name]
		if !x.Secret {
			v.Variables[name] = VariableView{Value: &x.Value}
			continue
		}
		v.Variables[name] = VariableView{Ciphertext: x.Sealed, KeyID: s.SecretsKey,
			EncryptionContext: map[string]string{"environmentId": e.ID, "variable": name}}
	}
	return v
}
