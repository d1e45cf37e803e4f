package lambdarun

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
