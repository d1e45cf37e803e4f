// Command triggers is the triggers function: POST and GET /v1/triggers;
// GET, PATCH and DELETE /v1/triggers/{triggerId}; and
// GET /v1/triggers/{triggerId}/runs; POST /v1/triggers/{triggerId}/run;
// POST /v1/triggers/{triggerId}/secret.
package main

import (
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/triggerapi"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
)

func main() {
	lambdaenv.Start(func(env *lambdaenv.Env) (any, error) {
		keys, err := secrets.Load(env.Config("KMS"))
		if err != nil {
			return nil, err
		}
		svc := &triggerapi.Service{
			Table: env.Table, Settings: env.Settings, Secrets: keys,
			Runs: &triggerrun.Runner{Start: &commit.Executor{Table: env.Table, Settings: env.Settings}, Table: env.Table, Secrets: keys},
		}
		return httpapi.New(env.Log, svc.Routes()...).WithMetrics(env.Metrics).Handle, nil
	})
}
