// Command waitroom is the waiting-room and seat-reservation server. Its whole life, from the flags to the
// drain, is app.Main; main only ties it to the process: the signals, the arguments, the environment and the
// exit status. `waitroom healthcheck` (app.Healthcheck) probes a running server instead, for a container's
// health check: exit status 0 when it answers 200, 1 otherwise. `waitroom reset-demo [-force] [id...]`
// (app.ResetDemo) resets sales, the demo's by default.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/fairlog"
	"github.com/waitroom/waitroom/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := func() error { return app.Main(ctx, os.Args, os.Getenv, os.Stdout) }
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		run = func() error { return app.Healthcheck(ctx, os.Args[1:], os.Getenv, os.Stderr) }
	}
	if len(os.Args) > 1 && os.Args[1] == "verify-log" {
		code := fairlog.Main(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "reset-demo" {
		run = func() error { return app.ResetDemo(ctx, os.Args[1:], os.Getenv, os.Stdout) }
	}
	if err := run(); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(1)
	}
}
