package lambdaenv

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/invocation"
)

// TestEndpoint: a service's endpoint is AWS_ENDPOINT_URL_<SERVICE>, else
// AWS_ENDPOINT_URL, else the service's own; AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
// drops both, as in the SDK's default configuration.
func TestEndpoint(t *testing.T) {
	get := func(service string) string {
		if e := endpoint(service); e != nil {
			return *e
		}
		return ""
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ENDPOINT_URL_SSM", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	if get("SSM") != "" || get("DYNAMODB") != "" {
		t.Error("an endpoint without any set")
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	t.Setenv("AWS_ENDPOINT_URL_SSM", "http://127.0.0.1:3001")
	if get("SSM") != "http://127.0.0.1:3001" || get("DYNAMODB") != "http://127.0.0.1:4566" {
		t.Errorf("SSM %q, DynamoDB %q", get("SSM"), get("DYNAMODB"))
	}
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	if get("SSM") != "" || get("DYNAMODB") != "" {
		t.Error("configured endpoints not ignored")
	}
}

// TestLoad: a function starts with the variables of the template and the
// region and credentials Lambda sets, and refuses to start without them.
func TestLoad(t *testing.T) {
	for k, v := range map[string]string{
		varTable: "SessionsTable", varConfig: "/cloud-agent/dev", varConfigTTL: "",
		"AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
	} {
		t.Setenv(k, v)
	}
	env, err := Load()
	if err != nil || env.Table == nil || env.Settings == nil || env.Log == nil || env.Metrics == nil {
		t.Fatalf("%+v %v", env, err)
	}
	for _, name := range []string{varTable, "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "")
			if _, err := Load(); err == nil {
				t.Errorf("started without %s", name)
			}
		})
	}
	t.Setenv(varConfigTTL, "0")
	if _, err := Load(); err == nil {
		t.Error("started with a TTL of 0")
	}
}

// TestConfig: a client built apart (the webhook secrets' KMS client) has
// the environment's region, credentials and HTTP client, and its
// service's endpoint; each service's configuration is its own.
func TestConfig(t *testing.T) {
	for k, v := range map[string]string{
		varTable: "SessionsTable", varConfig: "/cloud-agent/dev", "AWS_REGION": "eu-central-1",
		"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_KMS": "http://127.0.0.1:4599",
	} {
		t.Setenv(k, v)
	}
	env, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	kms, other := env.Config("KMS"), env.Config("OTHER")
	creds, err := kms.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKID" || creds.SecretAccessKey != "secret" || creds.SessionToken != "token" {
		t.Errorf("credentials %+v: %v", creds, err)
	}
	if kms.Region != "eu-central-1" || kms.HTTPClient == nil {
		t.Errorf("region %q, HTTP client %v", kms.Region, kms.HTTPClient)
	}
	if kms.BaseEndpoint == nil || *kms.BaseEndpoint != "http://127.0.0.1:4599" || other.BaseEndpoint != nil {
		t.Errorf("KMS's endpoint %v, another service's %v", kms.BaseEndpoint, other.BaseEndpoint)
	}
}

// TestFunctionDimensions: the metrics' Function dimension is
// AWS_LAMBDA_FUNCTION_NAME and their Version dimension
// AWS_LAMBDA_FUNCTION_VERSION, read when the environment loads; "local"
// and "$LATEST" when they are not set.
func TestFunctionDimensions(t *testing.T) {
	for k, v := range map[string]string{
		varTable: "SessionsTable", varConfig: "/cloud-agent/dev", varConfigTTL: "",
		"AWS_REGION": "eu-central-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
	} {
		t.Setenv(k, v)
	}
	for _, r := range []struct{ function, version, wantFunction, wantVersion string }{
		{"cloud-agent-SessionStartFunction-Ab12", "7", "cloud-agent-SessionStartFunction-Ab12", "7"},
		{"", "", unnamed, unpublished},
	} {
		t.Setenv(varFunction, r.function)
		t.Setenv(varVersion, r.version)
		env, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(varFunction, "read once")
		t.Setenv(varVersion, "read once")
		ctx, rec := env.Metrics.Begin(context.Background())
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
