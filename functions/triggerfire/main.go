// Command triggerfire is the trigger firing function: every minute, an
// EventBridge schedule invokes it to start the sessions of due triggers.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cloud-agent/control-plane/shared/lambdaenv"
	"github.com/cloud-agent/control-plane/shared/start"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

func main() {
	env, err := lambdaenv.Load(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	f := &trigger.Firing{
		Table: env.Table, Settings: env.Settings, Log: env.Log,
		Start: &start.Service{Table: env.Table, Settings: env.Settings},
	}
	lambda.Start(f.Handle)
}
