// Command mvp is the service (`mvp serve`) and its command line client (submit, get, list, logs, cancel, events).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mvp2/mvp/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli.Run(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, Serve: serveTo, Doctor: doctorTo}))
}
