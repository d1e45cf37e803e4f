package eventbus

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
)

// Client is an EventBridge client of the stand-in served at endpoint, as
// a function's is with AWS_ENDPOINT_URL_EVENTBRIDGE set to it.
func Client(endpoint string) *eventbridge.Client {
	return eventbridge.New(eventbridge.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}
