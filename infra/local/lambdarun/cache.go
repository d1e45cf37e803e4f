package lambdarun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

// The built bootstraps are kept under the user's cache folder, one folder
// per key (sourceKey): the tests of several packages and each `make run`
// start the same functions from the same sources, and linking a bootstrap
// is most of a build's time once the build cache holds its packages.
// Folders of keys not used for cacheMaxAge are removed when a new one is
// made.
const cacheMaxAge = 24 * time.Hour

// cacheRoot is the folder of the kept bootstraps, "" when the user has no
// cache folder (then every build is made afresh).
func cacheRoot() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "cloud-agent-control-plane", "bootstraps")
}

// sourceKey is what a bootstrap built from repo for goarch depends on:
// every file of repo but tests (*_test.go), .git, bin, build and the
// dot-folders, hashed by path and content, with the go command's version
// and the variables that change its builds. Any change of a source, of
// go.mod, of the Makefile or of the toolchain makes a new key.
func sourceKey(ctx context.Context, repo, goarch string) (string, error) {
	h := sha256.New()
	cmd := childproc.CommandContext(ctx, "go", "env", "GOVERSION", "GOFLAGS", "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOPROXY")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=auto") // as the Makefile sets it
	env, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	fmt.Fprintf(h, "%s\n%s\n", goarch, env)
	err = filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, path)
		switch name := d.Name(); {
		case d.IsDir() && rel != "." && (strings.HasPrefix(name, ".") || rel == "bin" || rel == "build"):
			return filepath.SkipDir
		case !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cached puts in out/bootstrap the bootstrap of function id kept under
// root/key, which build makes first when it is not there (it writes
// into the folder it is given). One build of a key and function runs at
// a time, across processes: another waits for it and takes its result.
// It reports whether the bootstrap was there already.
func cached(root, key, id, out string, build func(dir string) error) (hit bool, err error) {
	keyDir := filepath.Join(root, key)
	if err := os.MkdirAll(keyDir, 0o755); err != nil {
		return false, err
	}
	lock, err := os.OpenFile(filepath.Join(keyDir, id+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return false, err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	kept := filepath.Join(keyDir, id)
	if _, err := os.Stat(filepath.Join(kept, "bootstrap")); err == nil {
		hit = true
		now := time.Now()
		_ = os.Chtimes(keyDir, now, now)
	} else {
		tmp := kept + ".new"
		if err := os.RemoveAll(tmp); err != nil {
			return false, err
		}
		if err := build(tmp); err != nil {
			return false, err
		}
		if err := os.Rename(tmp, kept); err != nil {
			return false, err
		}
		trim(root, keyDir)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return hit, err
	}
	return hit, copyFile(filepath.Join(kept, "bootstrap"), filepath.Join(out, "bootstrap"))
}

// trim removes the folders of root, but keep, not used for cacheMaxAge.
func trim(root, keep string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		path := filepath.Join(root, e.Name())
		if info, err := e.Info(); err == nil && path != keep && time.Since(info.ModTime()) > cacheMaxAge {
			_ = os.RemoveAll(path)
		}
	}
}

// copyFile links to, or else copies, the executable from at to, over
// what to held.
func copyFile(from, to string) error {
	if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if os.Link(from, to) == nil {
		return nil
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
