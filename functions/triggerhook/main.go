// Command triggerhook is the trigger hook function: POST
// /v1/hooks/{triggerId}, a webhook delivery to a trigger, with no caller:
// the delivery proves itself with the trigger's secret.
package main

import (
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/hook"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/secrets"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
)

func main() {
	lambdaenv.Start(func(env *lambdaenv.Env) (any, error) {
		keys, err := secrets.Load(env.Config("KMS"))
		if err != nil {
			return nil, err
		}
		runs := &triggerrun.Runner{Start: &commit.Executor{Table: env.Table, Settings: env.Settings}, Table: env.Table}
		svc := &hook.Service{Table: env.Table, Settings: env.Settings, Secrets: keys, Runs: runs}
		return httpapi.New(env.Log, svc.Routes()...).WithMetrics(env.Metrics).Handle, nil
	})
}
