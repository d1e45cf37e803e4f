package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	lambdasdk "github.com/aws/aws-sdk-go-v2/service/lambda"
)

// TestInvokerInvokesTheAlias: in AWS each batch is a synchronous Invoke
// of the function's alias with the event as its payload; the answer is
// the function's, and a function error fails the batch.
func TestInvokerInvokesTheAlias(t *testing.T) {
	var path, query, payload string
	failNext := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		path, query, payload = r.URL.Path, r.URL.RawQuery, string(b)
		if failNext {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
		}
		_, _ = io.WriteString(w, `{"batchItemFailures":[]}`)
	}))
	t.Cleanup(srv.Close)
	client := lambdasdk.New(lambdasdk.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
	deliver := invoker(client, "stack-SessionEventsFunction-X", "live")
	answer, err := deliver(context.Background(), []byte(`{"Records":[]}`))
	if err != nil || string(answer) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", answer, err)
	}
	if path != "/2015-03-31/functions/stack-SessionEventsFunction-X/invocations" || query != "Qualifier=live" || payload != `{"Records":[]}` {
		t.Errorf("invoked %s?%s with %s", path, query, payload)
	}
	failNext = true
	if _, err := deliver(context.Background(), []byte(`{"Records":[]}`)); err == nil || !strings.Contains(err.Error(), "Unhandled") {
		t.Errorf("a function error: %v", err)
	}
}
