// Command generator renders a settings.yaml into an AppWrapper that wraps a
// distributed PyTorch training job. See pkg/cli for the commands.
package main

import (
	"os"

	"github.com/torchwrap/generator/pkg/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
