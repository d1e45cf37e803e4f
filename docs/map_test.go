package docs_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

const module = "github.com/cloud-agent/control-plane/"

// TestImportArrows: the arrows of docs/architecture.md are the imports as
// go list shows them: every arrow is an import, direct or through others,
// and every direct import between the packages the arrows name follows
// from the arrows. "imports nothing of ours" holds too.
func TestImportArrows(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	real := importGraph(t)
	drawn, alone := arrows(t, string(doc), real)
	for from, tos := range drawn {
		for to := range tos {
			if !reaches(real, from, to) {
				t.Errorf("docs/architecture.md draws %s → %s, which does not import it", short(from), short(to))
			}
		}
	}
	for from, tos := range real {
		if _, named := drawn[from]; !named && !alone[from] {
			continue
		}
		for to := range tos {
			if _, named := drawn[to]; (named || alone[to]) && !reaches(drawn, from, to) {
				t.Errorf("%s imports %s: docs/architecture.md does not draw it", short(from), short(to))
			}
		}
	}
	for p := range alone {
		if len(real[p]) != 0 {
			t.Errorf("docs/architecture.md says %s imports nothing of ours; it imports %v", short(p), real[p])
		}
	}
}

// importGraph is every package of the module with its direct imports of
// the module's packages (tests left out), and "functions", which imports
// what the functions import.
func importGraph(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out, err := childproc.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	g := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		g[f[0]] = map[string]bool{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				g[f[0]][imp] = true
			}
		}
	}
	functions := map[string]bool{}
	for p, imps := range g {
		if strings.HasPrefix(p, module+"functions/") {
			for imp := range imps {
				functions[imp] = true
			}
		}
	}
	g[module+"functions"] = functions
	return g
}

// arrows reads the import block after "Imports run one way": each line
// one or more clauses separated by ";", each a chain of comma-separated
// names joined by →, in which every name of a link imports every name of
// the next. A name followed by
// "(imports nothing of ours)" is in alone.
func arrows(t *testing.T, doc string, real map[string]map[string]bool) (drawn map[string]map[string]bool, alone map[string]bool) {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "Imports run one way")
	if !ok {
		t.Fatal("docs/architecture.md has no import arrows")
	}
	block := strings.Split(rest, "```")[1]
	drawn, alone = map[string]map[string]bool{}, map[string]bool{}
	paren := regexp.MustCompile(`\(([^)]*)\)`)
	for _, line := range strings.Split(block, "\n") {
		for _, m := range paren.FindAllStringSubmatch(line, -1) {
			if m[1] == "imports nothing of ours" {
				last := strings.Split(strings.TrimSpace(line[:strings.Index(line, m[0])]), "→")
				for _, p := range packagesOf(t, last[len(last)-1], real) {
					alone[p] = true
				}
			}
		}
		line = paren.ReplaceAllString(line, "")
		for _, clause := range strings.Split(line, ";") {
			links := strings.Split(clause, "→")
			for i := 0; i+1 < len(links); i++ {
				for _, from := range packagesOf(t, links[i], real) {
					for _, to := range packagesOf(t, links[i+1], real) {
						if drawn[from] == nil {
							drawn[from] = map[string]bool{}
						}
						drawn[from][to] = true
					}
				}
			}
			for _, link := range links {
				for _, p := range packagesOf(t, link, real) {
					if drawn[p] == nil {
						drawn[p] = map[string]bool{}
					}
				}
			}
		}
	}
	return drawn, alone
}

// packagesOf is the packages a comma-separated list of names stands for:
// a path under the module that package ("functions": the functions
// together), a bare name the package of that name in shared/,
// infra/local/ or infra/.
func packagesOf(t *testing.T, list string, real map[string]map[string]bool) []string {
	t.Helper()
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := ""
		for _, dir := range []string{"", "shared/", "infra/local/", "infra/"} {
			if _, ok := real[module+dir+name]; ok {
				found = module + dir + name
				break
			}
		}
		if found == "" {
			t.Errorf("docs/architecture.md's arrows name %q, which is no package", name)
			continue
		}
		out = append(out, found)
	}
	return out
}

// reaches reports whether from imports to in g, directly or through others.
func reaches(g map[string]map[string]bool, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(p string) bool {
		if p == to {
			return true
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		for next := range g[p] {
			if walk(next) {
				return true
			}
		}
		return false
	}
	return from != to && walk(from)
}

func short(p string) string { return strings.TrimPrefix(p, module) }

// TestLayoutNamesEveryPackage: the README's layout table and the map of
// docs/architecture.md name every package of shared/ and infra/ (the
// functions' folders are functions/).
func TestLayoutNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, _ := strings.Cut(string(readme), "## Layout")
	layout, _, _ = strings.Cut(layout, "\n## ")
	m, _, _ := strings.Cut(string(arch), "Imports run one way")
	for p := range importGraph(t) {
		dir := short(p)
		if !strings.HasPrefix(dir, "shared/") && !strings.HasPrefix(dir, "infra/") {
			continue
		}
		parent, base := dir[:strings.LastIndex(dir, "/")], dir[strings.LastIndex(dir, "/")+1:]
		// A row may name the package, or its folder's last part beside its
		// siblings, or its parent folder with the package's name.
		if !strings.Contains(layout, "`"+dir+"/`") && !strings.Contains(layout, "`"+base+"/`") &&
			!(strings.Contains(layout, "`"+parent+"/`") && strings.Contains(layout, "`"+base+"`")) {
			t.Errorf("the README's layout table does not name %s/", dir)
		}
		if !strings.Contains(m, dir+"/") && !(strings.Contains(m, parent+"/") && strings.Contains(m, "("+base+")")) {
			t.Errorf("docs/architecture.md's map does not name %s/", dir)
		}
	}
}

// TestReadmeTriesATriggerNow: "Trying a trigger locally" leads with what a
// user would do, a start now; the firing's own recipes come after it.
func TestReadmeTriesATriggerNow(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Trying a trigger locally")
	if !ok {
		t.Fatal(`the README has no "Trying a trigger locally"`)
	}
	first := strings.Split(section, "```")
	if len(first) < 2 || !strings.Contains(first[1], "-X POST http://127.0.0.1:3000/v1/triggers/$ID/run") {
		t.Errorf("the section's first command is not a start now:\n%s", first[min(1, len(first)-1)])
	}
	if now, fire := strings.Index(section, "/v1/triggers/$ID/run"), strings.Index(section, "/_local/schedule/"); fire < now {
		t.Error("the firing's recipes come before the start now")
	}
}
