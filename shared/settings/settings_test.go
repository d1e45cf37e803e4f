package settings_test

import (
	"context"
	"encoding/json/v2"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/settings"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

const path = "/cloud-agent/test"

func client(url string) *ssm.Client {
	return ssm.New(ssm.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// standIn serves the parameters through the local settings stand-in and
// returns its URL and the settings file, which the test may rewrite.
func standIn(t *testing.T, params []settings.Parameter) (string, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "settings.json")
	write(t, file, params)
	srv := httptest.NewServer(&paramstore.Server{File: file, Path: path})
	t.Cleanup(srv.Close)
	return srv.URL, file
}

func write(t *testing.T, file string, params []settings.Parameter) {
	t.Helper()
	data, _ := json.Marshal(params)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func defaultName(t *testing.T, p *allocation.Policy) string {
	t.Helper()
	d, err := p.Default()
	if err != nil {
		t.Fatal(err)
	}
	return d.Name()
}

// TestParameters: each parameter of section 7 reaches the policy through the
// real SSM client; missing ones take their built-in values; "-" is empty;
// more parameters than one page are all read.
func TestParameters(t *testing.T) {
	params := []settings.Parameter{
		{Name: settings.ParamDefault, Type: "String", Value: "vercel-small"},
		{Name: settings.ParamSelectable, Type: "StringList", Value: "vercel-small, vercel-large"},
		{Name: settings.ParamRetiredAllocations, Type: "StringList", Value: "cloudflare-containers-standard-3"},
		{Name: settings.ParamRetiredProviders, Type: "StringList", Value: "-"},
		{Name: settings.ParamSelectionOwners, Type: "StringList", Value: "org_a,u9"},
	}
	for i := range 12 {
		params = append(params, settings.Parameter{Name: fmt.Sprintf("other/p%02d", i), Type: "String", Value: "x"})
	}
	url, _ := standIn(t, params)
	s := settings.New(client(url), path, time.Minute)
	p, err := s.Policy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := defaultName(t, p); got != allocation.VercelSmall {
		t.Errorf("default %s", got)
	}
	o := p.OptionsFor("u9")
	var names []string
	for _, x := range o.Options {
		names = append(names, x.Allocation)
	}
	if !o.Enabled || !slices.Equal(names, []string{allocation.VercelSmall, allocation.VercelLarge}) || !slices.Contains(o.Retired, allocation.ContainersStandard3) {
		t.Errorf("options %+v", o)
	}
	if p.MaySelect("u1") {
		t.Error("selection owners not applied")
	}

	url, _ = standIn(t, nil)
	p, err = settings.New(client(url), path, time.Minute).Policy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := defaultName(t, p); got != allocation.BuiltinDefault || !p.MaySelect("anyone") {
		t.Errorf("built-ins: default %s", got)
	}
}

// TestIgnoredValuesAreLogged: a value naming an unknown allocation or
// provider, or one that can never be selected, is ignored, with a warning
// for the invocation's log line.
func TestIgnoredValuesAreLogged(t *testing.T) {
	url, _ := standIn(t, []settings.Parameter{
		{Name: settings.ParamSelectable, Type: "StringList", Value: "vercel-small,vercel-huge,cloudflare-shared"},
		{Name: settings.ParamRetiredProviders, Type: "StringList", Value: "aws"},
	})
	ctx, record := invocation.With(context.Background())
	p, err := settings.New(client(url), path, time.Minute).Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(record.Warnings(), "\n")
	for _, want := range []string{"vercel-huge", "cloudflare-shared", `"aws"`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("the warnings do not name %s: %s", want, warnings)
		}
	}
	if got := len(record.Warnings()); got != 3 {
		t.Errorf("%d warnings, want 3", got)
	}
	if o := p.OptionsFor("u1"); len(o.Options) != 2 { // the default and vercel-small
		t.Errorf("options %+v", o.Options)
	}
}

// TestReadFile: a settings file is a JSON array of parameters, whatever
// the case of its members' names; a missing file holds none; one that is
// not such an array is an error that names it.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, []byte(`[{"name":"allocation/default","type":"String","value":"vercel-small"},
		{"Name":"provider/retired","TYPE":"StringList","Value":"vercel"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := settings.ReadFile(file)
	want := []settings.Parameter{{Name: "allocation/default", Type: "String", Value: "vercel-small"}, {Name: "provider/retired", Type: "StringList", Value: "vercel"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("%+v %v", got, err)
	}
	if got, err := settings.ReadFile(filepath.Join(dir, "none.json")); got != nil || err != nil {
		t.Errorf("a missing file: %+v %v", got, err)
	}
	for _, bad := range []string{"not json", `{"name":"allocation/default"}`, `[{"name":1}]`} {
		if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := settings.ReadFile(file); err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestFilePolicy: a settings file gives the policy, and the warnings, that
// the same parameters give through Parameter Store; a missing file gives
// the built-in settings.
func TestFilePolicy(t *testing.T) {
	url, file := standIn(t, []settings.Parameter{
		{Name: settings.ParamDefault, Type: "String", Value: "vercel-small"},
		{Name: settings.ParamSelectable, Type: "StringList", Value: "vercel-small,vercel-huge"},
		{Name: settings.ParamSelectionOwners, Type: "StringList", Value: "org_a"},
	})
	ssmCtx, ssmRecord := invocation.With(context.Background())
	viaSSM, err := settings.New(client(url), path, time.Minute).Policy(ssmCtx)
	if err != nil {
		t.Fatal(err)
	}
	fileCtx, fileRecord := invocation.With(context.Background())
	fromFile, err := settings.FilePolicy(fileCtx, file)
	if err != nil {
		t.Fatal(err)
	}
	if defaultName(t, fromFile) != allocation.VercelSmall || !reflect.DeepEqual(fromFile.OptionsFor("org_a"), viaSSM.OptionsFor("org_a")) || fromFile.MaySelect("u1") {
		t.Errorf("the file's policy: %+v, Parameter Store's: %+v", fromFile.OptionsFor("org_a"), viaSSM.OptionsFor("org_a"))
	}
	if w := fileRecord.Warnings(); len(w) != 1 || !slices.Equal(w, ssmRecord.Warnings()) {
		t.Errorf("the file's warnings %q, Parameter Store's %q", w, ssmRecord.Warnings())
	}

	p, err := settings.FilePolicy(context.Background(), filepath.Join(t.TempDir(), "none.json"))
	if err != nil || defaultName(t, p) != allocation.BuiltinDefault || !p.MaySelect("anyone") {
		t.Errorf("a missing file: %v", err)
	}
	if err := os.WriteFile(file, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := settings.FilePolicy(context.Background(), file); err == nil {
		t.Error("a file that is not JSON was read")
	}
}

// TestConfigValues: "-" is an empty list, a missing parameter is unset, list
// items are trimmed.
func TestConfigValues(t *testing.T) {
	c := settings.Config(map[string]string{settings.ParamSelectable: "-", settings.ParamSelectionOwners: " a , ,b "})
	if c.Selectable == nil || len(c.Selectable) != 0 || c.RetiredAllocations != nil || c.Default != nil ||
		!slices.Equal(c.SelectionOwners, []string{"a", "b"}) {
		t.Errorf("%+v", c)
	}
}

// TestBuiltin: the built-in parameters read back as the built-in settings,
// one parameter for each.
func TestBuiltin(t *testing.T) {
	values := map[string]string{}
	for _, p := range settings.Builtin() {
		if _, ok := values[p.Name]; ok {
			t.Errorf("%s twice", p.Name)
		}
		values[p.Name] = p.Value
	}
	if got, want := settings.Config(values), allocation.BuiltinConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("the built-in parameters %v read as %+v, want %+v", values, got, want)
	}
}

// TestCacheAndLastGood: settings are read once per TTL; a failed refresh
// keeps the last good ones, with a warning; a cold start that cannot read them is 503.
func TestCacheAndLastGood(t *testing.T) {
	url, file := standIn(t, []settings.Parameter{{Name: settings.ParamDefault, Type: "String", Value: "vercel-small"}})
	s := settings.New(client(url), path, time.Minute)
	clock := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return clock })
	ctx := context.Background()
	if p, err := s.Policy(ctx); err != nil || defaultName(t, p) != allocation.VercelSmall {
		t.Fatal(err)
	}
	write(t, file, []settings.Parameter{{Name: settings.ParamDefault, Type: "String", Value: "vercel-large"}})
	clock = clock.Add(59 * time.Second)
	if p, _ := s.Policy(ctx); defaultName(t, p) != allocation.VercelSmall {
		t.Error("read again before the TTL")
	}
	clock = clock.Add(10 * time.Second) // past the TTL and its jitter (at most a tenth)
	if p, _ := s.Policy(ctx); defaultName(t, p) != allocation.VercelLarge {
		t.Error("not read again after the TTL")
	}
	if err := os.WriteFile(file, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Minute)
	warned, record := invocation.With(ctx)
	if p, err := s.Policy(warned); err != nil || defaultName(t, p) != allocation.VercelLarge {
		t.Errorf("a failed refresh lost the last good settings: %v", err)
	}
	if w := record.Warnings(); len(w) != 1 || !strings.Contains(w[0], "refresh failed") {
		t.Errorf("warnings %v", w)
	}

	cold := settings.New(client("http://127.0.0.1:1"), path, time.Minute)
	if _, err := cold.Policy(ctx); problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Errorf("cold start without settings: %v", err)
	}
}

// viaProxy is a client of the stand-in at url through a fault-injecting
// proxy, with the SDK's retries and their waits cut short.
func viaProxy(t *testing.T, url string) (*faultproxy.Proxy, *ssm.Client) {
	p := faultproxy.New(url)
	t.Cleanup(p.Close)
	return p, ssm.New(ssm.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(p.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:     retry.AddWithMaxBackoffDelay(retry.NewStandard(), time.Millisecond),
	})
}

// TestSSMFaults: throttling and dropped connections from Parameter Store are
// retried by the SDK; when the retries are spent on a cold start the
// answer is service_unavailable, and after a good read the last good
// settings stay.
func TestSSMFaults(t *testing.T) {
	url, _ := standIn(t, []settings.Parameter{{Name: settings.ParamDefault, Type: "String", Value: "vercel-small"}})
	ctx := context.Background()
	clock := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

	p, c := viaProxy(t, url)
	cold := settings.New(c, path, time.Minute)
	p.Inject("GetParametersByPath", 10, faultproxy.SSMThrottle)
	if _, err := cold.Policy(ctx); problem.CodeOf(err) != problem.ServiceUnavailable || p.Count("GetParametersByPath") < 2 {
		t.Fatalf("throttled cold start: %v after %d attempts", err, p.Count("GetParametersByPath"))
	}

	p, c = viaProxy(t, url)
	s := settings.New(c, path, time.Minute)
	s.SetClock(func() time.Time { return clock })
	p.Inject("GetParametersByPath", 1, faultproxy.Drop)
	if pol, err := s.Policy(ctx); err != nil || defaultName(t, pol) != allocation.VercelSmall {
		t.Fatalf("a dropped connection was not retried: %v", err)
	}
	clock = clock.Add(2 * time.Minute)
	p.Inject("GetParametersByPath", 10, faultproxy.SSMThrottle)
	if pol, err := s.Policy(ctx); err != nil || defaultName(t, pol) != allocation.VercelSmall {
		t.Errorf("a throttled refresh lost the last good settings: %v", err)
	}
}

// TestJitter: each execution environment refreshes at its TTL plus up to a
// tenth of it, so that environments do not refresh together.
func TestJitter(t *testing.T) {
	url, _ := standIn(t, nil)
	c := client(url)
	clock := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	seen := map[time.Duration]bool{}
	for range 20 {
		s := settings.New(c, path, time.Minute)
		s.SetClock(func() time.Time { return clock })
		if _, err := s.Policy(context.Background()); err != nil {
			t.Fatal(err)
		}
		d := s.RefreshAt().Sub(clock)
		if d < time.Minute || d > time.Minute+6*time.Second {
			t.Errorf("refresh after %v", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Error("every environment refreshes at the same moment")
	}
}

// TestMoto reads the same parameters from moto's Parameter Store, when moto
// is installed.
func TestMoto(t *testing.T) {
	c := client(motoserver.URL(t))
	ctx := context.Background()
	for name, v := range map[string]string{settings.ParamDefault: "vercel-large", settings.ParamSelectionOwners: "-"} {
		typ := ssmtypes.ParameterTypeString
		if name != settings.ParamDefault {
			typ = ssmtypes.ParameterTypeStringList
		}
		if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(path + "/" + name), Value: aws.String(v), Type: typ, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := settings.New(c, path, time.Minute).Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if defaultName(t, p) != allocation.VercelLarge || p.MaySelect("u1") {
		t.Errorf("moto settings not applied")
	}
}

// TestParseTTL: CONFIG_TTL_SECONDS is whole seconds, default 60.
func TestParseTTL(t *testing.T) {
	if d, err := settings.ParseTTL(""); d != time.Minute || err != nil {
		t.Errorf("default %v %v", d, err)
	}
	if d, err := settings.ParseTTL("5"); d != 5*time.Second || err != nil {
		t.Errorf("5: %v %v", d, err)
	}
	for _, bad := range []string{"0", "-1", "1.5", "x"} {
		if _, err := settings.ParseTTL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDeliveriesPerMinute: webhook/deliveries-per-minute through the real
// SSM client, from the same read as the policy: a whole number from 1 to
// 10000; unset, or any other value (ignored with a warning), 60.
func TestDeliveriesPerMinute(t *testing.T) {
	for _, r := range []struct {
		rule, value string
		set         bool
		want        int
		warned      bool
	}{
		{"unset: the built-in value", "", false, 60, false},
		{"a whole number", "120", true, 120, false},
		{"spaces around it", " 30 ", true, 30, false},
		{"the least", "1", true, 1, false},
		{"the most", "10000", true, 10000, false},
		{"zero", "0", true, 60, true},
		{"over the most", "10001", true, 60, true},
		{"not a whole number", "1.5", true, 60, true},
		{"not a number", "many", true, 60, true},
	} {
		t.Run(r.rule, func(t *testing.T) {
			var params []settings.Parameter
			if r.set {
				params = append(params, settings.Parameter{Name: settings.ParamDeliveries, Type: "String", Value: r.value})
			}
			url, _ := standIn(t, params)
			ctx, record := invocation.With(context.Background())
			n, err := settings.New(client(url), path, time.Minute).DeliveriesPerMinute(ctx)
			warned := strings.Contains(strings.Join(record.Warnings(), "\n"), settings.ParamDeliveries)
			if err != nil || n != r.want || warned != r.warned {
				t.Errorf("%d, warned %t: %v", n, warned, err)
			}
		})
	}
}
