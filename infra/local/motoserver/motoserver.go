// Package motoserver starts moto's server, once per test binary, for tests
// that run against it as a second AWS backend (it serves DynamoDB and SSM
// on one endpoint). A test gets it through URL, which skips the test,
// saying why, where there is none (moto_server is not on the PATH, say):
// `go test -v` lists it as SKIP, never as PASS. The server is tied to the
// test binary (see childproc): on Linux it dies with it, however the
// binary ends.
package motoserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/childproc"
)

var (
	once sync.Once
	cmd  *exec.Cmd
	// exited is closed once the server has exited and Wait has returned.
	exited chan struct{}
	url    string
	err    error
)

// URL returns the endpoint of the moto server (Start). Where moto_server
// is not installed, it skips the test with the reason; one installed that
// does not start fails the test: that is a broken machine, not a missing
// tool.
func URL(t testing.TB) string {
	t.Helper()
	url, err := Start()
	switch {
	case errors.Is(err, errNotInstalled):
		t.Skipf("moto backend skipped: %v", err)
	case err != nil:
		t.Fatalf("moto backend: %v", err)
	}
	return url
}

var errNotInstalled = errors.New("moto_server is not on the PATH")

// Start returns the endpoint of the moto server, starting it on a free
// loopback port the first time; the error says why there is none (a server
// that exits at start says so at once). Tests call URL; Start is for a
// test binary's own processes, before its tests run.
func Start() (string, error) {
	once.Do(func() {
		path, lookErr := exec.LookPath("moto_server")
		if lookErr != nil {
			err = errNotInstalled
			return
		}
		// The free port is closed before moto binds it: another process
		// may take it in between, and moto then exits. Each try is held
		// to moto answering as moto, on a new port.
		for range 3 {
			if url, err = start(path); !errors.Is(err, errTaken) {
				return
			}
		}
	})
	return url, err
}

// errTaken: another process took the port before moto bound it.
var errTaken = errors.New("moto_server's port was taken before it bound it")

// start starts moto on a free port and waits until it answers as moto
// (its API's /moto-api/data.json), or exits.
func start(path string) (string, error) {
	ln, listenErr := net.Listen("tcp", "127.0.0.1:0")
	if listenErr != nil {
		return "", listenErr
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd = childproc.Command(path, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var waitErr error
	exited = make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			return "", fmt.Errorf("%w: moto_server exited at start: %v", errTaken, waitErr)
		default:
		}
		resp, getErr := http.Get("http://" + addr + "/moto-api/data.json")
		if getErr != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return "http://" + addr, nil
		}
		_ = childproc.Kill(cmd)
		<-exited
		return "", errTaken // another server answers there
	}
	return "", fmt.Errorf("moto_server did not start listening within 30s")
}

// Stop kills the server's process group if it was started, and when tests
// asked for it in vain, says so on standard error: the output of a run
// without moto (with -v, or of a package that fails) ends saying what it
// did not test.
func Stop() {
	if exited != nil {
		_ = childproc.Kill(cmd)
		<-exited
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "moto backend skipped: %v\n", err)
	}
}
