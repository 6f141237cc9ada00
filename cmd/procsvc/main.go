// Command procsvc is the procsvc server and its operator commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/procsvc/procsvc/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.ProcessEnv())
	stop()
	os.Exit(code)
}
