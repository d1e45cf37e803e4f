package settings

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Client reads parameters with Parameter Store's GetParametersByPath (AWS
// JSON 1.1), each attempt signed with Signature Version 4 and retried as
// the SDK's clients retry: by Retryer, the SDK's standard retryer when
// nil. Every other field must be set.
type Client struct {
	// Endpoint is the service's URL: Endpoint(Region), or an override
	// such as AWS_ENDPOINT_URL_SSM.
	Endpoint    string
	Region      string
	Credentials aws.CredentialsProvider
	HTTPClient  aws.HTTPClient
	Retryer     aws.Retryer
}

// Endpoint is Parameter Store's endpoint in region, under the DNS suffix of
// the region's partition.
func Endpoint(region string) string {
	suffix := "amazonaws.com"
	for _, p := range []struct{ prefix, suffix string }{
		{"cn-", "amazonaws.com.cn"},
		{"eusc-", "amazonaws.eu"},
		{"us-iso-", "c2s.ic.gov"},
		{"us-isob-", "sc2s.sgov.gov"},
		{"eu-isoe-", "cloud.adc-e.uk"},
		{"us-isof-", "csp.hci.ic.gov"},
	} {
		if strings.HasPrefix(region, p.prefix) {
			suffix = p.suffix
		}
	}
	return "https://ssm." + region + "." + suffix
}

// signer signs every Client's requests; it keeps the signing keys it
// derived (one per day, region and credentials).
var signer = v4.NewSigner()

// maxResponse bounds the body of one answer: a page holds at most ten
// parameters of at most 8 KB each.
const maxResponse = 1 << 20

type pageRequest struct {
	Path      string
	Recursive bool
	NextToken string `json:",omitempty"`
}

type pageResponse struct {
	Parameters []struct{ Name, Value string }
	NextToken  string
}

// ParametersByPath reads every parameter under path, recursively, a page
// per request.
func (c *Client) ParametersByPath(ctx context.Context, path string) (map[string]string, error) {
	values := map[string]string{}
	token := ""
	for {
		body, err := json.Marshal(pageRequest{Path: path, Recursive: true, NextToken: token})
		if err != nil {
			return nil, err
		}
		page, err := c.page(ctx, body)
		if err != nil {
			return nil, fmt.Errorf("GetParametersByPath: %w", err)
		}
		for _, p := range page.Parameters {
			values[p.Name] = p.Value
		}
		if page.NextToken == "" {
			return values, nil
		}
		token = page.NextToken
	}
}

// page reads one page, with the retryer's attempts and delays.
func (c *Client) page(ctx context.Context, body []byte) (*pageResponse, error) {
	r := c.Retryer
	if r == nil {
		r = retry.NewStandard()
	}
	release := func(error) error { return nil }
	for attempt := 1; ; attempt++ {
		page, err := c.attempt(ctx, body)
		_ = release(err)
		if err == nil || !r.IsErrorRetryable(err) {
			return page, err
		}
		if attempt >= r.MaxAttempts() {
			return nil, fmt.Errorf("%d attempts: %w", attempt, err)
		}
		var quotaErr error
		if release, quotaErr = r.GetRetryToken(ctx, err); quotaErr != nil {
			return nil, errors.Join(err, quotaErr)
		}
		delay, delayErr := r.RetryDelay(attempt, err)
		if delayErr != nil {
			return nil, errors.Join(err, delayErr)
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(delay):
		}
	}
}

func (c *Client) attempt(ctx context.Context, body []byte) (*pageResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.Endpoint, "/")+"/", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "AmazonSSM.GetParametersByPath")
	creds, err := c.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("retrieving credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ssm", c.Region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		return nil, &sendError{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, &sendError{err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, newAPIError(resp, data)
	}
	var page pageResponse
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	return &page, nil
}

// sendError is a request that got no answer, or no whole answer: a
// connection error, which the retryer retries.
type sendError struct{ err error }

func (e *sendError) Error() string         { return "sending the request: " + e.err.Error() }
func (e *sendError) Unwrap() error         { return e.err }
func (e *sendError) ConnectionError() bool { return true }

// APIError is an error answer from Parameter Store. The retryer judges it
// by its code and status: throttling and 5xx are retried.
type APIError struct {
	Status    int
	Code      string // e.g. ThrottlingException
	Message   string
	RequestID string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("status %d, request id %s: %s: %s", e.Status, e.RequestID, e.Code, e.Message)
}

// ErrorCode is the error's code.
func (e *APIError) ErrorCode() string { return e.Code }

// ErrorMessage is the service's message.
func (e *APIError) ErrorMessage() string { return e.Message }

// HTTPStatusCode is the answer's status.
func (e *APIError) HTTPStatusCode() int { return e.Status }

// newAPIError reads an AWS JSON error: its code from X-Amzn-ErrorType or
// the body's __type (without the namespace before "#" or the URI after
// ":"), else the status.
func newAPIError(resp *http.Response, body []byte) error {
	var doc struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &doc)
	code := cmp.Or(resp.Header.Get("X-Amzn-ErrorType"), doc.Type)
	code, _, _ = strings.Cut(code, ":")
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return &APIError{
		Status: resp.StatusCode, Code: cmp.Or(code, http.StatusText(resp.StatusCode)),
		Message: doc.Message, RequestID: resp.Header.Get("X-Amzn-RequestId"),
	}
}
