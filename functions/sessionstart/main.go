// Command sessionstart is the session start function: POST /v1/sessions.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/start"
)

func main() {
	env, err := lambdaenv.Load(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	svc := &start.Service{Table: env.Table, Settings: env.Settings}
	lambda.Start(httpapi.New(env.Log, start.Route(svc)).Handle)
}
