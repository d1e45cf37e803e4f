package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// functionDeps lists the packages the functions' binaries link, as
// `make build-<LogicalId>` builds them; folder is a function's folder
// under functions/, or "..." for every function.
func functionDeps(t *testing.T, folder string) []string {
	t.Helper()
	out, err := childproc.Command("go", "list", "-deps", "-tags", "lambda.norpc", "../functions/"+folder).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", folder, err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/cloud-agent/control-plane/shared/app") {
		t.Fatalf("go list -deps of functions/%s gave no dependency list:\n%s", folder, out)
	}
	return deps
}

// TestFunctionsImportNoInfra: no function links anything of infra/: not
// the local stack or its shortcuts (unverified tokens), not the template's
// model (goformation), not the operations tooling.
func TestFunctionsImportNoInfra(t *testing.T) {
	for _, pkg := range functionDeps(t, "...") {
		if strings.HasPrefix(pkg, "github.com/cloud-agent/control-plane/infra/") {
			t.Errorf("a function imports %s", pkg)
		}
	}
}

// TestZoneDataBuiltIn: the functions that read schedules carry the zone
// data in their binaries: provided.al2023 may have no zone files.
func TestZoneDataBuiltIn(t *testing.T) {
	for _, folder := range []string{"triggers", "triggerfire"} {
		if !slices.Contains(functionDeps(t, folder), "time/tzdata") {
			t.Errorf("functions/%s does not link time/tzdata", folder)
		}
	}
}

// TestKMSWhereSecrets: a function links the KMS client if and only if it
// holds a KMS key (its main runs it through package keyed): the webhook
// secrets' or the environments' secret variables'. The KMS client's
// initialisation costs the others' cold starts (docs/performance.md).
func TestKMSWhereSecrets(t *testing.T) {
	folders, err := os.ReadDir("../functions")
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, f := range folders {
		if !f.IsDir() {
			continue
		}
		main, err := os.ReadFile("../functions/" + f.Name() + "/main.go")
		if err != nil {
			t.Fatal(err)
		}
		holds := strings.Contains(string(main), "keyed.Run(")
		if holds {
			holders = append(holders, f.Name())
		}
		if links := slices.Contains(functionDeps(t, f.Name()), "github.com/aws/aws-sdk-go-v2/service/kms"); links != holds {
			t.Errorf("functions/%s links KMS: %v; holds a key: %v", f.Name(), links, holds)
		}
	}
	if want := []string{"environments", "runtime", "sessionevents", "triggerhook", "triggers"}; !slices.Equal(holders, want) {
		t.Errorf("%v hold KMS keys, want %v", holders, want)
	}
}

// TestDomainKnowsNoAWS: the packages that decide (the domain's, webhook,
// ids, jsonbody, start, environment, outcome and announce) link nothing of AWS, not
// even the attribute values of the table's items (the item shapes are the
// store's), nor the store, the settings or the HTTP layer: they decide
// from the values they are handed.
func TestDomainKnowsNoAWS(t *testing.T) {
	const shared = "github.com/cloud-agent/control-plane/shared/"
	for _, pkg := range []string{"allocation", "session", "trigger", "ledger", "webhook", "ids", "jsonbody", "start", "environment", "outcome", "announce"} {
		out, err := childproc.Command("go", "list", "-deps", "../shared/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/aws/") || slices.Contains([]string{shared + "store", shared + "settings", shared + "httpapi"}, dep) {
				t.Errorf("shared/%s links %s", pkg, dep)
			}
		}
	}
}

// TestOneWiring: every function is built by package app from one
// configuration read once: no code of shared/ or functions/ but app's
// reads the environment, and a function's main.go imports nothing of the
// project but app and app/keyed.
func TestOneWiring(t *testing.T) {
	const project = `"github.com/cloud-agent/control-plane/`
	for _, root := range []string{"../shared", "../functions"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(path, "../shared/app/") && regexp.MustCompile(`os\.(Getenv|LookupEnv|Environ)\(`).Match(src) {
				t.Errorf("%s reads the environment; only shared/app does", path)
			}
			if root == "../functions" {
				for _, line := range strings.Split(string(src), "\n") {
					if i := strings.Index(line, project); i >= 0 && !slices.Contains([]string{project + `shared/app"`, project + `shared/app/keyed"`}, strings.TrimSpace(line[i:])) {
						t.Errorf("%s imports %s: a main imports only app and app/keyed", path, strings.TrimSpace(line[i:]))
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
