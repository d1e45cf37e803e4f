package settings

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// captured is a request as the server saw it.
type captured struct {
	header http.Header
	method string
	path   string
	body   map[string]any
	// resigned is the Authorization header the server computes for the
	// request, with the body it received and the request's own time.
	resigned string
}

// capture serves answer to every request and keeps what it received.
func capture(t *testing.T, answer func(w http.ResponseWriter, n int)) (string, func() []captured) {
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		c := captured{header: r.Header.Clone(), method: r.Method, path: r.URL.Path}
		_ = json.Unmarshal(data, &c.body)
		// Sign again what arrived, with only the headers the client signed.
		again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.Path, bytes.NewReader(data))
		for _, h := range signedHeaders(r.Header.Get("Authorization")) {
			if h != "host" {
				again.Header.Set(h, r.Header.Get(h))
			}
		}
		at, _ := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		sum := sha256.Sum256(data)
		creds, _ := localCredentials.Retrieve(context.Background())
		_ = v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "ssm", "us-east-1", at)
		c.resigned = again.Header.Get("Authorization")
		mu.Lock()
		got = append(got, c)
		n := len(got)
		mu.Unlock()
		answer(w, n)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// signedHeaders are the SignedHeaders of a Signature Version 4
// Authorization header.
func signedHeaders(auth string) []string {
	_, rest, _ := strings.Cut(auth, "SignedHeaders=")
	list, _, _ := strings.Cut(rest, ",")
	return strings.Split(list, ";")
}

// scope is the credential scope of an Authorization header, without its
// date: region, service and terminator.
func scope(auth string) string {
	_, rest, _ := strings.Cut(auth, "Credential=")
	cred, _, _ := strings.Cut(rest, ",")
	parts := strings.SplitN(cred, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "/" + parts[2]
}

// TestClientAsTheSDK: Client sends GetParametersByPath as the SDK's client
// sends it (operation, body, credential scope), with a valid signature,
// follows the pages the same way, and reads the same parameters.
func TestClientAsTheSDK(t *testing.T) {
	pages := []string{
		`{"Parameters":[{"Name":"/cloud-agent/test/a","Value":"1","Type":"String","Version":1}],"NextToken":"p2"}`,
		`{"Parameters":[{"Name":"/cloud-agent/test/b/c","Value":"x,y","Type":"StringList","Version":3}]}`,
	}
	ctx := context.Background()
	var requests [2][]captured
	var values [2]map[string]string
	for i, read := range []func(url string) (map[string]string, error){
		func(url string) (map[string]string, error) { return ourClient(url).ParametersByPath(ctx, path) },
		func(url string) (map[string]string, error) {
			return New(sdkClient(url), path, time.Minute).reader.ParametersByPath(ctx, path)
		},
	} {
		url, got := capture(t, func(w http.ResponseWriter, n int) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			_, _ = io.WriteString(w, pages[(n-1)%2])
		})
		v, err := read(url)
		if err != nil {
			t.Fatal(err)
		}
		requests[i], values[i] = got(), v
	}
	want := map[string]string{"/cloud-agent/test/a": "1", "/cloud-agent/test/b/c": "x,y"}
	if !maps.Equal(values[0], want) || !maps.Equal(values[1], want) {
		t.Errorf("Client read %v, the SDK %v", values[0], values[1])
	}
	ours, sdk := requests[0], requests[1]
	if len(ours) != 2 || len(sdk) != 2 {
		t.Fatalf("%d and %d requests, want 2 each", len(ours), len(sdk))
	}
	for i := range ours {
		o, s := ours[i], sdk[i]
		for _, h := range []string{"X-Amz-Target", "Content-Type"} {
			if o.header.Get(h) != s.header.Get(h) {
				t.Errorf("page %d %s: %q, the SDK sends %q", i+1, h, o.header.Get(h), s.header.Get(h))
			}
		}
		if o.method != s.method || o.path != s.path || !reflect.DeepEqual(o.body, s.body) {
			t.Errorf("page %d: %s %s %v, the SDK sends %s %s %v", i+1, o.method, o.path, o.body, s.method, s.path, s.body)
		}
		auth := o.header.Get("Authorization")
		if scope(auth) != scope(s.header.Get("Authorization")) || scope(auth) != "local/us-east-1/ssm/aws4_request" {
			t.Errorf("page %d: credential scope %q, the SDK's %q", i+1, scope(auth), scope(s.header.Get("Authorization")))
		}
		for _, h := range []string{"content-type", "host", "x-amz-date", "x-amz-target"} {
			if !strings.Contains(";"+strings.Join(signedHeaders(auth), ";")+";", ";"+h+";") {
				t.Errorf("page %d: %s is not signed: %s", i+1, h, auth)
			}
		}
		if auth != o.resigned {
			t.Errorf("page %d: the signature does not match the request:\n%s\n%s", i+1, auth, o.resigned)
		}
	}
}

// TestClientErrors: an error answer is read by its code, from the header
// or the body, namespace and URI dropped; a refusal is not retried, a
// throttle or a 5xx is, up to the retryer's attempts.
func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		status   int
		header   string
		body     string
		code     string
		attempts int
	}{
		{"refused", 400, "", `{"__type":"com.amazonaws.ssm#AccessDeniedException","message":"no"}`, "AccessDeniedException", 1},
		{"header", 400, "ThrottlingException:http://internal.amazon.com/coral/com.amazonaws.ssm/", `{}`, "ThrottlingException", 3},
		{"internal", 500, "", `{"__type":"InternalServerError","Message":"oops"}`, "InternalServerError", 3},
		{"no code", 503, "", ``, "Service Unavailable", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, got := capture(t, func(w http.ResponseWriter, _ int) {
				if c.header != "" {
					w.Header().Set("X-Amzn-ErrorType", c.header)
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			})
			_, err := ourClient(url).ParametersByPath(ctx, path)
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Code != c.code || apiErr.Status != c.status {
				t.Fatalf("%v, want %s", err, c.code)
			}
			if n := len(got()); n != c.attempts {
				t.Errorf("%d attempts, want %d", n, c.attempts)
			}
			if _, err := FromReader(ourClient(url), path, time.Minute).Policy(ctx); problem.CodeOf(err) != problem.ServiceUnavailable {
				t.Errorf("a cold start that cannot read the settings: %v", err)
			}
		})
	}
}

// TestEndpoint: Parameter Store's endpoint is in the region's partition.
func TestEndpoint(t *testing.T) {
	for region, want := range map[string]string{
		"eu-central-1":    "https://ssm.eu-central-1.amazonaws.com",
		"us-gov-west-1":   "https://ssm.us-gov-west-1.amazonaws.com",
		"cn-north-1":      "https://ssm.cn-north-1.amazonaws.com.cn",
		"eusc-de-east-1":  "https://ssm.eusc-de-east-1.amazonaws.eu",
		"us-iso-east-1":   "https://ssm.us-iso-east-1.c2s.ic.gov",
		"us-isob-east-1":  "https://ssm.us-isob-east-1.sc2s.sgov.gov",
		"eu-isoe-west-1":  "https://ssm.eu-isoe-west-1.cloud.adc-e.uk",
		"us-isof-south-1": "https://ssm.us-isof-south-1.csp.hci.ic.gov",
	} {
		if got := Endpoint(region); got != want {
			t.Errorf("%s: %s, want %s", region, got, want)
		}
	}
}
