package template_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// templatePath is the product's template, from this package.
const templatePath = "../../template.yaml"

// needSAMTranslator skips a test that reads the SAM translator's output
// when the translator is not installed, saying what is not checked.
func needSAMTranslator(t *testing.T, skipped string) {
	t.Helper()
	if err := childproc.Command("python3", "-c", "import samtranslator").Run(); err != nil {
		t.Skip("the SAM translator is not installed (the Python package samtranslator, installed with cfn-lint): " + skipped)
	}
}

// transform runs the SAM translator on a template with the stack's
// parameters, every function's code at codeURI.
func transform(t *testing.T, template, codeURI string, params map[string]string) string {
	t.Helper()
	args := []string{filepath.Join("testdata", "samtransform", "transform.py"), template, codeURI}
	for k, v := range params {
		args = append(args, k+"="+v)
	}
	cmd := childproc.Command("python3", args...)
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION="+deployRegion)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM translator: %v\n%s", err, stderr.String())
	}
	return string(out)
}
