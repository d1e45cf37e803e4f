// Command sessionstart is the session start function: POST /v1/sessions.
package main

import (
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/startapi"
)

func main() {
	lambdaenv.Start(func(env *lambdaenv.Env) (any, error) {
		svc := &commit.Executor{Table: env.Table, Settings: env.Settings}
		return httpapi.New(env.Log, startapi.Route(svc)).WithMetrics(env.Metrics).Handle, nil
	})
}
