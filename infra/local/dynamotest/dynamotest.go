// Package dynamotest gives tests real DynamoDB endpoints over HTTP: the
// embedded one always, and moto when moto_server is on the PATH (skipped
// with a message when it is not). Each test gets a fresh table created from
// template.yaml. The moto server also serves SSM.
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
	URL  string
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

// Backends returns the embedded endpoint, and moto when it is installed.
// Tests run once per backend with t.Run.
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
	bs := []Backend{{"embedded", embedded.URL}}
	if url, err := Moto(); err == nil {
		bs = append(bs, Backend{"moto", url})
	} else {
		t.Logf("moto backend skipped: %v", err)
	}
	return bs
}

// Moto returns the URL of the moto server (see motoserver).
func Moto() (string, error) { return motoserver.URL() }

// templateOnce is template.yaml, read once per test binary.
var templateOnce = sync.OnceValues(func() (*template.Template, error) {
	_, file, _, _ := runtime.Caller(0)
	return template.Load(filepath.Join(filepath.Dir(file), "..", "..", "..", "template.yaml"))
})

// Table creates a fresh table with the template's definition on the backend
// and returns a client for it and the table's name.
func Table(t testing.TB, b Backend) (*dynamodb.Client, string) {
	t.Helper()
	name := fmt.Sprintf("table-%d", tables.Add(1))
	c := localdb.Client(b.URL)
	createTable(t, c, name, true)
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return c, name
}

// LocalTable serves an embedded endpoint of the test's own, holding the
// template's table under the name the local stack gives it (its logical
// id, which the functions' environment in template.yaml names), without
// its time to live, so that nothing the test puts expires under it. It
// returns a client of the endpoint and its URL.
func LocalTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	d, err := dynamo.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	c := localdb.Client(d.URL)
	createTable(t, c, template.TableLogicalID, false)
	return c, d.URL
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
