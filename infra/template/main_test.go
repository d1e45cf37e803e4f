package template_test

import (
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
)

// TestMain stops the endpoints the tests started: moto (the deploy and the
// least-privilege proof) and the embedded one.
func TestMain(m *testing.M) { dynamotest.Main(m) }
