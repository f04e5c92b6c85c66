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
// With -multikueue it also starts a MultiKueue manager (e2e.StartManager),
// whose Kueue dispatches the jobs of LocalQueue multikueue-queue (namespaces
// default and mk-team) to the simulated cluster, its worker worker1, where
// they run on the process nodes; standard output has then three lines: the
// manager's kubeconfig file, the worker's, and a kubeconfig file with both,
// as contexts manager (the current one) and worker1.
//
//	sim-cluster -repo PATH [-multikueue]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

func main() {
	repo := flag.String("repo", "", "the generator's repository, whose testdata holds the pinned programs and the process nodes' programs")
	multiKueue := flag.Bool("multikueue", false, "also start a MultiKueue manager whose worker is the simulated cluster")
	flag.Parse()
	if *repo == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: sim-cluster -repo PATH [-multikueue] (make sim-cluster passes -repo)")
		os.Exit(2)
	}
	log.SetFlags(log.Ltime)
	log.SetPrefix("sim-cluster: ")
	if err := run(*repo, *multiKueue); err != nil {
		log.Fatal(err)
	}
}

func run(repo string, multiKueue bool) error {
	crds, err := fidelity.JobCRDs(fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD)
	if err != nil {
		return err
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
		cluster, manager *e2e.Cluster
		err              error
	}
	start := make(chan started, 1)
	go func() {
		var s started
		s.cluster, s.err = e2e.StartSimulated(repo, dir, crds, log.Printf)
		if s.err == nil && multiKueue {
			managerDir := filepath.Join(dir, "manager")
			if s.err = os.Mkdir(managerDir, 0o700); s.err == nil {
				s.manager, s.err = e2e.StartManager(repo, managerDir, s.cluster, crds, log.Printf)
			}
			if s.err != nil {
				s.cluster.Stop()
			}
		}
		start <- s
	}()
	var cluster, manager *e2e.Cluster
	select {
	case s := <-start:
		if s.err != nil {
			return s.err
		}
		cluster, manager = s.cluster, s.manager
	case <-stop:
		// What it started dies with it (Pdeathsig), the builds with the
		// terminal's signal.
		os.RemoveAll(dir)
		log.Fatal("stopped while starting")
	}
	if manager == nil {
		fmt.Println(cluster.Kubeconfig)
		log.Printf("ready. In another terminal:\n\n  export KUBECONFIG=%s\n  generator submit --wait -f testdata/sim/allreduce.settings.yaml\n  generator status allreduce\n\nCtrl-C stops the cluster.", cluster.Kubeconfig)
	} else {
		both := filepath.Join(dir, "kubeconfig-multikueue")
		if err := e2e.WriteMultiKubeconfig(both, manager, cluster, e2e.Admin); err != nil {
			manager.Stop()
			cluster.Stop()
			return err
		}
		fmt.Println(manager.Kubeconfig)
		fmt.Println(cluster.Kubeconfig)
		fmt.Println(both)
		log.Printf("ready. In another terminal, a job queued on the manager that runs on the worker:\n\n  export KUBECONFIG=%s\n  generator submit --wait -f testdata/sim/allreduce.settings.yaml --set queueName=%s\n  generator status allreduce\n  kubectl --context %s get pods\n\nCtrl-C stops both clusters.", both, e2e.MultiKueueQueue, e2e.MultiKueueWorker)
	}
	<-stop
	log.Printf("stopping")
	var pids []int
	if manager != nil {
		pids = manager.Stop()
	}
	pids = append(pids, cluster.Stop()...)
	log.Printf("stopped %d processes; removing %s", len(pids), dir)
	return nil
}
