// Package dynamotest gives tests real DynamoDB endpoints over HTTP: the
// embedded one, and moto, started when a test first uses it (a test on
// moto skips, saying why, where moto_server is not on the PATH). Each test
// gets a fresh table created from template.yaml. The moto server also
// serves SSM.
package dynamotest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/motoserver"
	"github.com/cloud-agent/control-plane/infra/template"
)

// Backend is a DynamoDB-compatible endpoint.
type Backend struct {
	Name string
	// URL is the endpoint's; moto's is found by Endpoint, which starts it.
	URL  string
	moto bool
}

// Endpoint is the backend's URL. Moto's server starts the first time; where
// there is none, the test skips with the reason (motoserver.URL).
func (b Backend) Endpoint(t testing.TB) string {
	t.Helper()
	if b.moto {
		return motoserver.URL(t)
	}
	return b.URL
}

var (
	embeddedOnce sync.Once
	embedded     *dynamo.Endpoint
	embeddedErr  error

	tables atomic.Int64
)

// Main runs the tests of a package and then stops the backends it started.
// Call it from TestMain.
func Main(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		serve()
	}
	code := m.Run()
	motoserver.Stop()
	if embedded != nil {
		_ = embedded.Close(context.Background())
	}
	os.Exit(code)
}

// Backends returns the embedded endpoint, then moto. Tests run once per
// backend with t.Run; on moto, Table (or Endpoint) skips the subtest where
// moto_server is not installed.
func Backends(t testing.TB) []Backend {
	t.Helper()
	// The tests' endpoint does not sweep expired items: the contract's
	// rules on rows whose expiresAt has passed but that are still readable
	// (TestExpiredLedgerRowCountsAsAbsent) must meet them readable every
	// time. The sweep has its own tests in infra/local/dynamo.
	embeddedOnce.Do(func() { embedded, embeddedErr = dynamo.Start("127.0.0.1:0", dynamo.SweepEvery(24*time.Hour)) })
	if embeddedErr != nil {
		t.Fatalf("embedded DynamoDB endpoint: %v", embeddedErr)
	}
	return []Backend{{Name: "embedded", URL: embedded.URL}, {Name: "moto", moto: true}}
}

// templateOnce is template.yaml, read once per test binary.
var templateOnce = sync.OnceValues(func() (*template.Template, error) {
	_, file, _, _ := runtime.Caller(0)
	return template.Load(filepath.Join(filepath.Dir(file), "..", "..", "..", "template.yaml"))
})

// Table creates a fresh table with the template's definition on the backend
// and returns a client for it and the table's name; on moto, where there is
// none, the test skips (Endpoint).
func Table(t testing.TB, b Backend) (*dynamodb.Client, string) {
	t.Helper()
	c := localdb.Client(b.Endpoint(t))
	name := fmt.Sprintf("table-%d", tables.Add(1))
	createTable(t, c, name, true)
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return c, name
}

// ForEach runs f in a subtest of each backend of bs, named by it, on a
// fresh table of the template's definition (Table); a subtest of a backend
// that is not there skips.
func ForEach(t *testing.T, bs []Backend, f func(t *testing.T, c *dynamodb.Client, name string)) {
	for _, b := range bs {
		t.Run(b.Name, func(t *testing.T) {
			c, name := Table(t, b)
			f(t, c, name)
		})
	}
}

// LocalTable serves an embedded endpoint of the test's own, holding the
// template's table under the name the local stack gives it (its logical
// id, which the functions' environment in template.yaml names), without
// its time to live, so that nothing the test puts expires under it. It
// returns a client of the endpoint and its URL.
func LocalTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	c, url := Empty(t)
	createTable(t, c, template.TableLogicalID, false)
	return c, url
}

// Empty serves an embedded endpoint of the test's own, with no table,
// stopped with the test, and returns a client of it and its URL.
func Empty(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	return localdb.Client(d.URL), d.URL
}

// createTable creates a table of the template's definition named name,
// with the template's time to live when ttl is true.
func createTable(t testing.TB, c *dynamodb.Client, name string, ttl bool) {
	t.Helper()
	tpl, err := templateOnce()
	if err != nil {
		t.Fatal(err)
	}
	in, err := template.CreateTableInput(tpl, template.TableLogicalID, name)
	if err != nil {
		t.Fatal(err)
	}
	var ttlIn *dynamodb.UpdateTimeToLiveInput
	if ttl {
		if ttlIn, err = template.TimeToLiveInput(tpl, template.TableLogicalID, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := template.EnsureTable(context.Background(), c, in, ttlIn); err != nil {
		t.Fatal(err)
	}
}
