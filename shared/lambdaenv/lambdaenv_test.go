package lambdaenv

import (
	"context"
	"testing"
	"time"
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

// TestFunctionDimension: the metrics' Function dimension is
// AWS_LAMBDA_FUNCTION_NAME, read when the environment loads; "local" when
// it is not set.
func TestFunctionDimension(t *testing.T) {
	for k, v := range map[string]string{
		varTable: "SessionsTable", varConfig: "/cloud-agent/dev", varConfigTTL: "",
		"AWS_REGION": "eu-central-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
	} {
		t.Setenv(k, v)
	}
	for set, want := range map[string]string{"cloud-agent-SessionStartFunction-Ab12": "cloud-agent-SessionStartFunction-Ab12", "": unnamed} {
		t.Setenv(varFunction, set)
		env, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(varFunction, "read once")
		_, rec := env.Metrics.Begin(context.Background())
		got := ""
		for _, a := range rec.Attrs(time.Now()) {
			if a.Key == "Function" {
				got = a.Value.String()
			}
		}
		if got != want {
			t.Errorf("%s=%q: Function %q, want %q", varFunction, set, got, want)
		}
	}
}
