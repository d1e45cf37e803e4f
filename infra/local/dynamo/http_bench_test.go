package dynamo_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

// BenchmarkFiredOverHTTP: what the endpoint's process spends, in CPU, on
// one fired trigger's requests (its transaction and a 125th of a shard's
// query, as BenchmarkFiredRequests/fired has them) sent over HTTP on
// loopback, with the SDK's headers and kept-alive connections, 32 at
// once as the firing sends them, to an endpoint in a process of its own
// on a table of 2,000 due triggers: endpoint-cpu-ns/fired is the
// process's CPU (user and system, from /proc) over the fired triggers,
// which benchtable sets against BenchmarkNext. The time per operation is
// the wall's, client included, and shared with the machine.
func BenchmarkFiredOverHTTP(b *testing.B) {
	p := dynamotest.Separate(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	send := func(op string, body []byte) error {
		req, err := http.NewRequest(http.MethodPost, p.URL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header = dynamo.SDKHeader(op)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", op, resp.Status)
		}
		return nil
	}
	ops, bodies := dynamo.FiringSetup()
	for i, op := range ops {
		if err := send(op, bodies[i]); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([][]byte, 16)
	for i := range queries {
		queries[i] = []byte(dynamo.ShardQuery(i))
	}
	const perShard = dynamo.FiringTriggers / 16
	fired := 0 // the transactions so far: the next fires trigger fired%FiringTriggers
	b.Run("concurrency=32", func(b *testing.B) {
		txs := make([][]byte, b.N)
		for i := range txs {
			txs[i] = []byte(dynamo.FiredBody((fired+i)%dynamo.FiringTriggers, (fired+i)/dynamo.FiringTriggers))
		}
		fired += b.N
		var next atomic.Int64
		before, err := p.CPU()
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1) - 1
				err := send("TransactWriteItems", txs[i])
				if err == nil && i%perShard == 0 {
					err = send("Query", queries[i/perShard%int64(len(queries))])
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		after, err := p.CPU()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after-before)/float64(b.N), "endpoint-cpu-ns/fired")
	})
}
