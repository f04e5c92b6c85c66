//go:build linux

// Command sim-cluster brings up, by hand, the simulated cluster that make
// e2e-cluster tests against: the API server, the controllers (Kueue,
// AppWrapper, the training operator, JobSet, Trainer v2), kwok's fake GPU
// nodes and the process nodes, whose pods run for real, with the same queues
// and objects. It prints the admin's kubeconfig file as its first line of
// standard output (progress goes to standard error), keeps the cluster until
// Ctrl-C (or SIGTERM), then stops everything it started and removes its
// folder. make sim-cluster runs it; it needs root, for the process nodes.
//
//	sim-cluster -repo PATH
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

func main() {
	repo := flag.String("repo", "", "the generator's repository, whose testdata holds the pinned programs and the process nodes' programs")
	flag.Parse()
	if *repo == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: sim-cluster -repo PATH (make sim-cluster passes it)")
		os.Exit(2)
	}
	log.SetFlags(log.Ltime)
	log.SetPrefix("sim-cluster: ")
	if err := run(*repo); err != nil {
		log.Fatal(err)
	}
}

func run(repo string) error {
	crds, err := fidelity.T9kCRDs()
	if err != nil {
		return err
	}
	for _, u := range []fidelity.UpstreamCRD{fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD} {
		data, err := u.Read()
		if err != nil {
			return err
		}
		crds = append(crds, data)
	}
	dir, err := os.MkdirTemp("", "sim-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	log.Printf("building what it runs (the first build takes about half an hour on two cores) and starting it in %s", dir)
	type started struct {
		cluster *e2e.Cluster
		err     error
	}
	start := make(chan started, 1)
	go func() {
		cluster, err := e2e.StartSimulated(repo, dir, crds, log.Printf)
		start <- started{cluster, err}
	}()
	var cluster *e2e.Cluster
	select {
	case s := <-start:
		if s.err != nil {
			return s.err
		}
		cluster = s.cluster
	case <-stop:
		// What it started dies with it (Pdeathsig), the builds with the
		// terminal's signal.
		os.RemoveAll(dir)
		log.Fatal("stopped while starting")
	}
	fmt.Println(cluster.Kubeconfig)
	log.Printf("ready. In another terminal:\n\n  export KUBECONFIG=%s\n  generator submit --wait -f testdata/sim/allreduce.settings.yaml\n  generator status allreduce\n\nCtrl-C stops the cluster.", cluster.Kubeconfig)
	<-stop
	log.Printf("stopping")
	pids := cluster.Stop()
	log.Printf("stopped %d processes; removing %s", len(pids), dir)
	return nil
}
