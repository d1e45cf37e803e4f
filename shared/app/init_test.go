package app_test

import (
	"bytes"
	"context"
	"encoding/json/v2"
	"errors"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/template"
)

// TestInitFailure: a function whose environment does not load, or whose
// handler cannot be built from it (the firing's FIRING_CONCURRENCY), logs
// one JSON line at level ERROR with the cause and no secret, writes
// nothing else, and exits non-zero. Each bootstrap is built as the
// Makefile builds it for Lambda and run with the template's environment.
func TestInitFailure(t *testing.T) {
	fns, err := template.LoadFunctions("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, fn := range fns {
		ids = append(ids, fn.LogicalID)
	}
	dir := t.TempDir()
	if err := lambdarun.Build(context.Background(), io.Discard, "../..", dir, ids...); err != nil {
		t.Fatal(err)
	}
	const secret, token = "secret-access-key-value", "session-token-value"
	lambda := map[string]string{"AWS_REGION": "eu-central-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token}
	run := func(t *testing.T, id string, env map[string]string, cause string) {
		t.Helper()
		cmd := childproc.Command(filepath.Join(dir, id, "bootstrap"))
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("exit %v", err)
		}
		out := stdout.String()
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || stderr.Len() != 0 {
			t.Fatalf("not one line: stdout %q, stderr %q", out, stderr.String())
		}
		var line struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &line); err != nil {
			t.Fatalf("not JSON: %q", out)
		}
		if line.Level != "ERROR" || line.Msg != "init" || !strings.Contains(line.Error, cause) {
			t.Errorf("line %s", out)
		}
		if strings.Contains(out, secret) || strings.Contains(out, token) {
			t.Errorf("a secret is logged: %s", out)
		}
	}
	for _, fn := range fns {
		env := func(name, value string) map[string]string {
			e := maps.Clone(fn.Environment)
			maps.Copy(e, lambda)
			e[name] = value
			return e
		}
		t.Run(fn.LogicalID+" without TABLE_NAME", func(t *testing.T) {
			run(t, fn.LogicalID, env("TABLE_NAME", ""), "TABLE_NAME")
		})
		if _, ok := fn.Environment["FIRING_CONCURRENCY"]; ok {
			t.Run(fn.LogicalID+" with FIRING_CONCURRENCY=0", func(t *testing.T) {
				run(t, fn.LogicalID, env("FIRING_CONCURRENCY", "0"), "FIRING_CONCURRENCY")
			})
		}
	}
}
