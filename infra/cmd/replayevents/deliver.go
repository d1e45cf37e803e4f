package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	lambdasdk "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/cloud-agent/control-plane/shared/app"
	"github.com/cloud-agent/control-plane/shared/app/keyed"
)

// invoker hands each batch to the deployed function: a synchronous
// Invoke of its alias, which Lambda runs as it runs the mapping's
// batches, under the function's own role (the only one SessionTokenKey's
// key policy lets derive tokens, and the bus's policy lets put events).
func invoker(client *lambdasdk.Client, function, alias string) Deliver {
	return func(ctx context.Context, event []byte) ([]byte, error) {
		out, err := client.Invoke(ctx, &lambdasdk.InvokeInput{
			FunctionName: aws.String(function), Qualifier: aws.String(alias), Payload: event,
		})
		if err != nil {
			return nil, err
		}
		if out.FunctionError != nil {
			return nil, fmt.Errorf("the function failed (%s): %s", *out.FunctionError, out.Payload)
		}
		return out.Payload, nil
	}
}

// inProcess hands each batch to the session events function built here
// as Lambda builds it (app and keyed, from the environment env gives it),
// through aws-lambda-go's handler, which decodes the event and encodes
// the answer as the runtime does. Locally: the stack has no Lambda API.
func inProcess(env map[string]string, log *slog.Logger) (Deliver, error) {
	c, err := app.FromLookup(func(name string) string { return env[name] })
	if err != nil {
		return nil, err
	}
	h, err := c.Handler(app.SessionEvents, log, func(c app.Config, p *app.Parts) error { return keyed.Keys(c, app.SessionEvents, p) })
	if err != nil {
		return nil, err
	}
	return lambda.NewHandler(h).Invoke, nil
}
