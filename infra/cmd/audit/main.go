// Command audit is `make audit`: it reports what a table still holds from
// the shared-sandbox era and the retired runtimes, and writes nothing;
// with -rewrite-triggers it also clears the saved allocation of the
// triggers and environments that fall back to the default, its one write
// (docs/operations.md). It links no local stack: it reads the local
// settings file through the functions' settings code.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/term"

	"github.com/cloud-agent/control-plane/infra/audit"
)

func main() {
	o, err := audit.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(2)
	}
	// A progress bar only on a terminal: none when the output is piped.
	if term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stderr.Fd())) {
		o.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := audit.Run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
}
