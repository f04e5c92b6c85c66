// Command prebuild builds, or finds in the cache, every program that the
// harness's tests build from the wrapper modules pinned in testdata (package
// pinned's sets): Helm 4, the OCI registry, the API server, the simulated cluster's
// controllers, in the order in which the tiers first need them. .ci/run
// starts it in the background, at the lowest priority, before its first
// step: these builds are most of a cold run, and so they use the processor
// time that the earlier steps leave idle. A test that needs a program while
// prebuild builds it waits for it rather than building it twice. make
// prebuild runs it.
//
//	prebuild -testdata PATH
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/torchwrap/generator/testdata/harness/pinned"
)

func main() {
	testdata := flag.String("testdata", "", "the repository's testdata folder, which holds the wrapper modules")
	flag.Parse()
	if *testdata == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: prebuild -testdata PATH (make prebuild passes it)")
		os.Exit(2)
	}
	log.SetFlags(log.Ltime)
	log.SetPrefix("prebuild: ")
	sets, err := pinned.All(*testdata)
	if err != nil {
		log.Fatal(err)
	}
	for _, set := range sets {
		if _, err := set.Build(*testdata, log.Printf); err != nil {
			log.Fatal(err)
		}
	}
}
