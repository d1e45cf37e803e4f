package dynamotest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
)

// childEnv makes TestOnEveryBackend run: it is set in the child binary
// of TestMotoSkips.
const childEnv = "DYNAMOTEST_CHILD"

func TestMain(m *testing.M) { dynamotest.Main(m) }

// TestMotoSkips: where moto_server is not on the PATH, a test on every
// backend passes on the embedded one and skips on moto, saying why; go
// test -v lists it as SKIP, not as PASS.
func TestMotoSkips(t *testing.T) {
	cmd := childproc.Command(os.Args[0], "-test.run=^TestOnEveryBackend$", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	for _, want := range []string{
		"--- PASS: TestOnEveryBackend/embedded",
		"--- SKIP: TestOnEveryBackend/moto",
		"moto backend skipped: moto_server is not on the PATH",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
}

// TestOnEveryBackend creates a table on each backend, in the child binary
// of TestMotoSkips.
func TestOnEveryBackend(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestMotoSkips in its child, without moto_server on the PATH")
	}
	for _, b := range dynamotest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { dynamotest.Table(t, b) })
	}
}
