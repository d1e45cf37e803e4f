// Command allocationlookup is the allocation lookup function:
// GET /v1/sessions/{sessionId}/allocation and GET /v1/allocations.
package main

import (
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/lookup"
)

func main() {
	lambdaenv.Start(func(env *lambdaenv.Env) (any, error) {
		svc := &lookup.Service{Table: env.Table, Settings: env.Settings}
		return httpapi.New(env.Log, svc.Routes()...).WithMetrics(env.Metrics).Handle, nil
	})
}
