package app

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/invocation"
)

// setEnv sets the variables a function starts with, and the others given.
func setEnv(t *testing.T, more map[string]string) {
	for k, v := range map[string]string{
		varTable: "SessionsTable", varConfig: "/cloud-agent/dev", varConfigTTL: "", varConcurrency: "",
		"AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_DYNAMODB": "", "AWS_ENDPOINT_URL_SSM": "", "AWS_ENDPOINT_URL_KMS": "",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "", varFunction: "", varVersion: "",
	} {
		t.Setenv(k, v)
	}
	for k, v := range more {
		t.Setenv(k, v)
	}
}

// endpointOf is the endpoint a service's clients are built with, "" for
// the service's own.
func endpointOf(t *testing.T, service string) string {
	t.Helper()
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if e := c.AWS(service).BaseEndpoint; e != nil {
		return *e
	}
	return ""
}

// TestEndpoint: a service's endpoint is AWS_ENDPOINT_URL_<SERVICE>, else
// AWS_ENDPOINT_URL, else the service's own; AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
// drops both, as in the SDK's default configuration.
func TestEndpoint(t *testing.T) {
	setEnv(t, nil)
	if endpointOf(t, "SSM") != "" || endpointOf(t, "DYNAMODB") != "" {
		t.Error("an endpoint without any set")
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	t.Setenv("AWS_ENDPOINT_URL_SSM", "http://127.0.0.1:3001")
	if ssm, db := endpointOf(t, "SSM"), endpointOf(t, "DYNAMODB"); ssm != "http://127.0.0.1:3001" || db != "http://127.0.0.1:4566" {
		t.Errorf("SSM %q, DynamoDB %q", ssm, db)
	}
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	if endpointOf(t, "SSM") != "" || endpointOf(t, "DYNAMODB") != "" {
		t.Error("configured endpoints not ignored")
	}
}

// TestFromEnv: a function starts with the variables of the template and
// the region and credentials Lambda sets, and refuses to start without
// them, or with a TTL or a concurrency out of range; every function
// builds from the configuration.
func TestFromEnv(t *testing.T) {
	setEnv(t, nil)
	c, err := FromEnv()
	if err != nil || c.Table != "SessionsTable" || c.SettingsPath != "/cloud-agent/dev" || c.Concurrency != 64 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, fn := range []Function{SessionStart, AllocationLookup, TriggerFire} {
		if h, err := handler(fn, nil, nil); err != nil || h == nil {
			t.Errorf("%s: %v", fn.ID, err)
		}
	}
	for _, name := range []string{varTable, varConfig, "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "")
			if _, err := FromEnv(); err == nil {
				t.Errorf("started without %s", name)
			}
		})
	}
	for name, value := range map[string]string{varConfigTTL: "0", varConcurrency: "257"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			if _, err := FromEnv(); err == nil {
				t.Errorf("started with %s=%s", name, value)
			}
		})
	}
}

// TestAWS: a client's configuration has the environment's region,
// credentials and HTTP client, and its service's endpoint; each service's
// endpoint is its own.
func TestAWS(t *testing.T) {
	setEnv(t, map[string]string{"AWS_ENDPOINT_URL_KMS": "http://127.0.0.1:4599"})
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	kms, other := c.AWS("KMS"), c.AWS("SSM")
	creds, err := kms.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKID" || creds.SecretAccessKey != "secret" || creds.SessionToken != "token" {
		t.Errorf("credentials %+v: %v", creds, err)
	}
	if kms.Region != "eu-central-1" || kms.HTTPClient == nil || kms.HTTPClient != other.HTTPClient {
		t.Errorf("region %q, HTTP client %v (another service's %v)", kms.Region, kms.HTTPClient, other.HTTPClient)
	}
	if kms.BaseEndpoint == nil || *kms.BaseEndpoint != "http://127.0.0.1:4599" || other.BaseEndpoint != nil {
		t.Errorf("KMS's endpoint %v, another service's %v", kms.BaseEndpoint, other.BaseEndpoint)
	}
}

// TestFunctionDimensions: the metrics' Function dimension is
// AWS_LAMBDA_FUNCTION_NAME and their Version dimension
// AWS_LAMBDA_FUNCTION_VERSION, read once with the configuration; "local"
// and "$LATEST" when they are not set.
func TestFunctionDimensions(t *testing.T) {
	setEnv(t, nil)
	for _, r := range []struct{ function, version, wantFunction, wantVersion string }{
		{"cloud-agent-SessionStartFunction-Ab12", "7", "cloud-agent-SessionStartFunction-Ab12", "7"},
		{"", "", unnamed, unpublished},
	} {
		t.Setenv(varFunction, r.function)
		t.Setenv(varVersion, r.version)
		c, err := FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(varFunction, "read once")
		t.Setenv(varVersion, "read once")
		ctx, rec := c.Parts(nil).Metrics.Begin(context.Background())
		invocation.Add(ctx, invocation.Metric{Name: "Faults", Unit: invocation.UnitCount, Value: 1, ByVersion: true})
		got := map[string]string{}
		for _, a := range rec.Attrs(time.Now()) {
			got[a.Key] = a.Value.String()
		}
		if got["Function"] != r.wantFunction || got["Version"] != r.wantVersion {
			t.Errorf("%s=%q, %s=%q: Function %q, Version %q; want %q, %q", varFunction, r.function, varVersion, r.version,
				got["Function"], got["Version"], r.wantFunction, r.wantVersion)
		}
	}
}

// TestTuneGC: the functions collect at GCPercent, under three quarters of
// the function's memory; GOGC and GOMEMLIMIT, when set, win.
func TestTuneGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
	tuneGC()
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != GCPercent || l != 384<<20 {
		t.Errorf("GOGC %d, GOMEMLIMIT %d, want %d and %d", p, l, GCPercent, 384<<20)
	}
	t.Setenv("GOGC", "200")
	t.Setenv("GOMEMLIMIT", "100MiB")
	tuneGC()
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != 100 || l != math.MaxInt64 {
		t.Errorf("with GOGC and GOMEMLIMIT set: GOGC %d, GOMEMLIMIT %d, want them left as they were", p, l)
	}
}
