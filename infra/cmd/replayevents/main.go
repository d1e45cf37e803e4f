// Command replayevents is `make replay-events`: it puts again the events
// of the stream batches that SessionEventsFunction gave up on
// (SessionEventsFailures' messages; locally the failure file), within
// the stream's 24 hours. It reads each batch's range from the table's
// stream, builds Lambda's event from its records with the local
// mapping's code (infra/streamevent), and hands it to the function in
// batches of at most 100: in AWS by invoking the function's alias, the
// only principal that may derive tokens and put on the bus; locally by
// running the function's code here on the local stack's stand-ins
// (docs/operations.md, docs/decisions.md). It links no local stack.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay-events:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "replay-events:", err)
		os.Exit(1)
	}
}

// run replays what the options name: the function's log lines (in
// process) go to stderr with the faults, the ranges' lines to stdout.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	streams, err := o.streams(ctx)
	if err != nil {
		return err
	}
	ranges, err := o.ranges(ctx)
	if err != nil {
		return err
	}
	deliver, err := o.deliver(ctx, slog.New(slog.NewJSONHandler(stderr, nil)))
	if err != nil {
		return err
	}
	return replay(ctx, streams, ranges, deliver, stdout, stderr)
}
