// Command generator renders a settings.yaml into an AppWrapper that wraps a
// distributed PyTorch training job. See pkg/cli for the commands.
package main

import (
	"os"
	"runtime/debug"

	"github.com/torchwrap/generator/pkg/cli"
)

func main() {
	// A render allocates a few MiB and exits: collecting them costs more than
	// it saves. The garbage collector runs only if the heap reaches 64 MiB (a
	// large batch, or a hostile file), which bounds memory all the same. The
	// commands that talk to a cluster turn it on again (pkg/cli's dial).
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
	os.Exit(cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
