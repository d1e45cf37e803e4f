package local

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"
)

// Dynamo is the embedded DynamoDB-compatible endpoint, served over HTTP.
type Dynamo struct {
	URL string
	srv *http.Server
}

// StartDynamo serves an empty embedded DynamoDB endpoint on addr
// (host:port; port 0 picks a free one): minidyn's server, with what
// dynamoEndpoint answers in front of it. Empty lists and maps read back
// as NULL (see typeResponse).
func StartDynamo(addr string) (*Dynamo, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	d := &Dynamo{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: newDynamoEndpoint(server.NewServer()), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return d, nil
}

// Close stops the endpoint.
func (d *Dynamo) Close(ctx context.Context) error { return d.srv.Shutdown(ctx) }

// DynamoClient is a DynamoDB client for a local endpoint, with local
// credentials.
func DynamoClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, optFns...)
}
