// Command triggers is the triggers function: POST and GET /v1/triggers,
// GET and DELETE /v1/triggers/{triggerId}.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/triggerapi"
)

func main() {
	env, err := lambdaenv.Load(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	svc := &triggerapi.Service{Table: env.Table, Settings: env.Settings}
	lambda.Start(httpapi.New(env.Log, svc.Routes()...).Handle)
}
