// Command gpuprobe records the GPU devices a container was given, runs a small
// deterministic matrix multiply on the GPU (or, without one, on the CPU, labelled as
// such), checks it against a CPU reference and prints one JSON line. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
