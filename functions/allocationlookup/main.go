// Command allocationlookup is the allocation lookup function:
// GET /v1/sessions/{sessionId}/allocation and GET /v1/allocations.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/lookup"
)

func main() {
	env, err := lambdaenv.Load(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	svc := &lookup.Service{Table: env.Table, Settings: env.Settings}
	lambda.Start(httpapi.New(env.Log, svc.Routes()...).Handle)
}
