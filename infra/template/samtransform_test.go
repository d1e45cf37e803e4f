package template_test

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// templatePath is the product's template, from this package.
const templatePath = "../../template.yaml"

// samTranslator is whether the SAM translator is installed, asked once.
var samTranslator = sync.OnceValue(func() bool {
	return childproc.Command("python3", "-c", "import samtranslator").Run() == nil
})

// needSAMTranslator skips a test that reads the SAM translator's output
// when the translator is not installed, saying what is not checked.
func needSAMTranslator(t *testing.T, skipped string) {
	t.Helper()
	if !samTranslator() {
		t.Skip("the SAM translator is not installed (the Python package samtranslator, installed with cfn-lint): " + skipped)
	}
}

// samInput is a template for the SAM translator, with the stack's
// parameters, every function's code at CodeURI.
type samInput struct {
	Template string            `json:"template"`
	CodeURI  string            `json:"codeUri"`
	Params   map[string]string `json:"params"`
}

// translated holds the translator's output by input, so that the tests
// that read the same template's ask once.
var translated sync.Map // samInput's JSON → string

// transform runs the SAM translator on the template at path with the
// stack's parameters, every function's code at codeURI.
func transform(t *testing.T, path, codeURI string, params map[string]string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return transformAll(t, []samInput{{string(text), codeURI, params}})[0]
}

// transformAll runs the SAM translator on every input in one run (its
// start, about a second, is most of a template's time), each output as
// CloudFormation JSON, in the inputs' order.
func transformAll(t *testing.T, inputs []samInput) []string {
	t.Helper()
	out := make([]string, len(inputs))
	var ask []samInput
	var at []int
	for i, in := range inputs {
		if v, ok := translated.Load(key(t, in)); ok {
			out[i] = v.(string)
		} else {
			ask, at = append(ask, in), append(at, i)
		}
	}
	if len(ask) == 0 {
		return out
	}
	body, err := json.Marshal(ask)
	if err != nil {
		t.Fatal(err)
	}
	cmd := childproc.Command("python3", filepath.Join("testdata", "samtransform", "transform.py"))
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION="+deployRegion)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	answer, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM translator: %v\n%s", err, stderr.String())
	}
	var got []jsontext.Value
	if err := json.Unmarshal(answer, &got); err != nil || len(got) != len(ask) {
		t.Fatalf("SAM translator: %d templates for %d (%v)", len(got), len(ask), err)
	}
	for j, i := range at {
		out[i] = string(got[j])
		translated.Store(key(t, ask[j]), out[i])
	}
	return out
}

func key(t *testing.T, in samInput) string {
	b, err := json.Marshal(in, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
