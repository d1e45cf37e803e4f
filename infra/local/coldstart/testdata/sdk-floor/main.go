// Command sdkfloor is the SDK's floor under the functions' cold starts:
// hello world that builds, as every function does, a DynamoDB and an SSM
// client, so that its initialisation holds what the SDK's packages spend
// (every operation's schema, the endpoints' tables) and nothing of the
// project's. A function's cold start over this floor's is its own code's.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func main() {
	region := os.Getenv("AWS_REGION")
	table, params := dynamodb.New(dynamodb.Options{Region: region}), ssm.New(ssm.Options{Region: region})
	lambda.Start(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		_, _ = table, params
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "hello"}, nil
	})
}
