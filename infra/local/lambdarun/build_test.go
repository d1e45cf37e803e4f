package lambdarun

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// fakeMakefile builds a "bootstrap" holding its architecture for any
// function but Broken, whose build fails.
const fakeMakefile = `build-Broken:
	@echo cannot build Broken; exit 1
build-%:
	@mkdir -p $(ARTIFACTS_DIR) && echo $(LAMBDA_GOARCH) > $(ARTIFACTS_DIR)/bootstrap
`

// TestBuildProgress: Build says, one line each, which function it builds,
// how many there are, and how long each took; a failed build says so and
// ends the builds, its error carrying the build's output.
func TestBuildProgress(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "Makefile"), []byte(fakeMakefile), 0o600); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	if err := BuildFor(context.Background(), &progress, "arm64", repo, dir, "A", "B"); err != nil {
		t.Fatal(err)
	}
	done := `done in [0-9.]+m?s\n`
	if want := regexp.MustCompile(`^building A \(1/2\)… ` + done + `building B \(2/2\)… ` + done + `$`); !want.MatchString(progress.String()) {
		t.Errorf("progress %q, want %s", progress.String(), want)
	}
	for _, id := range []string{"A", "B"} {
		if b, err := os.ReadFile(filepath.Join(dir, id, "bootstrap")); err != nil || string(b) != "arm64\n" {
			t.Errorf("%s: %q %v", id, b, err)
		}
	}

	progress.Reset()
	err := BuildFor(context.Background(), &progress, "arm64", repo, dir, "C", "Broken", "D")
	if err == nil || !strings.Contains(err.Error(), "building Broken") || !strings.Contains(err.Error(), "cannot build Broken") {
		t.Errorf("the failed build's error: %v", err)
	}
	if want := regexp.MustCompile(`^building C \(1/3\)… ` + done + `building Broken \(2/3\)… failed\n$`); !want.MatchString(progress.String()) {
		t.Errorf("progress %q, want %s", progress.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "D")); err == nil {
		t.Error("D was built after Broken failed")
	}
}

// TestBuildCache: a bootstrap built once from the same sources is taken
// from the cache, even by two builds at once, which make it once; a
// change of a source or of the Makefile builds it again, a change of a
// test does not; a failed build leaves nothing in the cache.
func TestBuildCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo, builds := t.TempDir(), filepath.Join(t.TempDir(), "builds")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	makefile := "build-Broken:\n\t@echo Broken >> " + builds + "; exit 1\nbuild-%:\n\t@echo $* >> " + builds +
		"\n\t@mkdir -p $(ARTIFACTS_DIR) && cat src.go > $(ARTIFACTS_DIR)/bootstrap\n"
	write("Makefile", makefile)
	write("src.go", "v1")
	write("src_test.go", "t1")
	build := func(want, progress string) {
		t.Helper()
		dir := t.TempDir()
		var p strings.Builder
		if err := BuildFor(context.Background(), &p, "arm64", repo, dir, "A"); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile("^building A \\(1/1\\)… " + progress + "\n$").MatchString(p.String()) {
			t.Errorf("progress %q, want %s", p.String(), progress)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "A", "bootstrap")); err != nil || string(b) != want {
			t.Errorf("bootstrap %q %v, want %q", b, err, want)
		}
	}
	count := func(want string) {
		t.Helper()
		if b, _ := os.ReadFile(builds); string(b) != want {
			t.Errorf("builds %q, want %q", b, want)
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := BuildFor(context.Background(), io.Discard, "arm64", repo, t.TempDir(), "A"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	count("A\n")
	build("v1", "cached")
	write("src_test.go", "t2")
	build("v1", "cached")
	count("A\n")
	write("src.go", "v2")
	build("v2", `done in [0-9.]+m?s`)
	count("A\nA\n")
	write("Makefile", makefile+"# changed\n")
	build("v2", `done in [0-9.]+m?s`)
	count("A\nA\nA\n")
	for range 2 {
		if err := BuildFor(context.Background(), io.Discard, "arm64", repo, t.TempDir(), "Broken"); err == nil {
			t.Error("Broken built")
		}
	}
	count("A\nA\nA\nBroken\nBroken\n")
}
