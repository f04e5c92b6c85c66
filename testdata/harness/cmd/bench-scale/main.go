//go:build linux

// Command bench-scale measures how what each command of the generator
// costs grows with the pods of a job and the jobs of a namespace, in the
// simulated cluster of make e2e-cluster (kwok's fake nodes, whose pods
// serve a training log in e2e.SimScaleNamespace): wall time, peak memory,
// requests to the API server and bytes read, for jobs of 1 to 1,024 pods
// of each kind that wraps many (a PyTorchJob in an AppWrapper, a JobSet
// in an AppWrapper, a TrainJob) and namespaces of 10 to 5,000 jobs; and a
// follower's requests while its job does not change, and how soon it
// tells a change (followers); beside kubectl doing the same, and the
// generator of an earlier commit (-before). It writes results.json, results.md and the plots (gnuplot)
// in -out. make bench-scale runs it; it needs root, as the simulated
// cluster does.
//
//	bench-scale -repo PATH -generator BIN [-before BIN] -out DIR [-pods 1,64,256,1024] [-jobs 10,1000,5000] [-runs 3] [-kinds PyTorchJob,JobSet,TrainJob]
//	bench-scale -report -out DIR
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/torchwrap/generator/testdata/harness/e2e"
	"github.com/torchwrap/generator/testdata/harness/fidelity"
)

// kinds are the kinds of job the bench runs: those that wrap many pods.
var kinds = []struct{ kind, short, selector, container string }{
	{"PyTorchJob", "ptj", "training.kubeflow.org/job-name=%s", "pytorch"},
	{"JobSet", "js", "jobset.sigs.k8s.io/jobset-name=%s", "pytorch"},
	{"TrainJob", "tj", "jobset.sigs.k8s.io/jobset-name=%s", "node"},
}

type bench struct {
	cluster   *e2e.Cluster
	kubectl   string
	generator string
	before    string
	runs      int
	follow    time.Duration
	// kinds are the kinds of job measured; [""] for all.
	kinds   []string
	tmp     string
	runner  *runner
	results []result
}

// result is the samples of a command at one size, by one tool: the
// generator, the generator -before, or kubectl.
type result struct {
	Command string   `json:"command"`
	Tool    string   `json:"tool"`
	Kind    string   `json:"kind,omitempty"`
	Pods    int      `json:"pods,omitempty"`
	Jobs    int      `json:"jobs,omitempty"`
	Samples []sample `json:"samples"`
	Median  sample   `json:"median"`
	// KubectlRequests is what kubectl asked, counted in a run of its own.
	KubectlRequests int `json:"kubectlRequests,omitempty"`
}

func main() {
	repo := flag.String("repo", "", "the generator's repository")
	generator := flag.String("generator", "", "the generator binary measured")
	before := flag.String("before", "", "the generator binary of an earlier commit, measured beside it (optional)")
	out := flag.String("out", "", "the folder of the results")
	pods := flag.String("pods", "1,64,256,1024", "the sizes of the jobs, in pods")
	jobs := flag.String("jobs", "10,1000,5000", "the sizes of the namespaces, in jobs")
	runs := flag.Int("runs", 3, "runs of each command that can be repeated (the median is kept)")
	only := flag.String("kinds", "", "the kinds of job measured, as PyTorchJob,JobSet (default: all)")
	follow := flag.Duration("follow", 20*time.Second, "how long logs -f follows")
	report := flag.Bool("report", false, "write results.md and the plots again from -out's results.json, and run nothing")
	flag.Parse()
	if *report && *out != "" {
		if err := rewrite(*out); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *repo == "" || *generator == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: bench-scale -repo PATH -generator BIN [-before BIN] -out DIR [-pods 1,64,256,1024] [-jobs 10,1000,5000] [-runs 3] [-kinds PyTorchJob,JobSet,TrainJob]")
		os.Exit(2)
	}
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench-scale: ")
	b := &bench{generator: *generator, before: *before, runs: *runs, follow: *follow, kinds: strings.Split(*only, ",")}
	if err := b.main(*repo, *out, numbers(*pods), numbers(*jobs)); err != nil {
		log.Fatal(err)
	}
}

// numbers reads a list of numbers ("" for none).
func numbers(list string) []int {
	var out []int
	for _, word := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(word))
		if err != nil {
			log.Fatalf("%q: not a list of numbers", list)
		}
		out = append(out, n)
	}
	return out
}

func (b *bench) main(repo, out string, pods, jobs []int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "bench-scale-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	// Every followed log is an inotify instance of kwok's.
	restore, err := sysctl("fs/inotify/max_user_instances", "8192")
	if err != nil {
		return err
	}
	defer restore()
	bins, err := e2e.Build(filepath.Join(repo, "testdata"), log.Printf)
	if err != nil {
		return err
	}
	b.kubectl = bins.Kubectl
	crds, err := fidelity.JobCRDs(fidelity.AppWrapperCRD, fidelity.PyTorchJobCRD)
	if err != nil {
		return err
	}
	clusterDir := filepath.Join(b.tmp, "cluster")
	if err := os.Mkdir(clusterDir, 0o755); err != nil {
		return err
	}
	if b.cluster, err = e2e.StartSimulated(repo, clusterDir, crds, log.Printf); err != nil {
		return err
	}
	defer b.cluster.Stop()
	b.runner = &runner{kubeconfig: b.cluster.Kubeconfig, cache: filepath.Join(b.tmp, "cache"), tmp: b.tmp}
	if _, err := b.cluster.Kubectl([]byte(scaleObjects()), "create", "-f", "-"); err != nil {
		return err
	}
	if err := b.waitFor("the scale nodes Ready", 3*time.Minute, func() bool {
		out, err := b.cluster.Kubectl(nil, "get", "nodes", "-l", "type=kwok-scale", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		return err == nil && strings.Count(out, "True") == scaleNodes
	}); err != nil {
		return err
	}
	ctx := context.Background()
	for _, k := range kinds {
		if !slices.Contains(b.kinds, k.kind) && !slices.Equal(b.kinds, []string{""}) {
			continue
		}
		for _, n := range pods {
			if err := b.job(k.kind, k.short, k.selector, k.container, n); err != nil {
				return err
			}
			b.write(out)
		}
	}
	if err := b.followers(); err != nil {
		return err
	}
	b.write(out)
	for _, n := range jobs {
		if err := b.namespace(ctx, n); err != nil {
			return err
		}
		b.write(out)
	}
	health, err := b.cluster.Kubectl(nil, "get", "events", "-A", "--field-selector", "reason=NodeNotReady", "-o", "name")
	if err != nil {
		return err
	}
	log.Printf("NodeNotReady events over the whole run: %d", len(strings.Fields(health)))
	log.Printf("peak resident memory of the cluster's processes (KiB): %v", b.cluster.Memory())
	return b.write(out)
}

// job measures the commands on a job of a kind and a number of pods, from
// its check to its deletion.
func (b *bench) job(kind, short, selector, container string, pods int) error {
	name := fmt.Sprintf("%s-%d", short, pods)
	ns := e2e.SimScaleNamespace
	file := filepath.Join(b.tmp, name+".settings.yaml")
	if err := os.WriteFile(file, []byte(settings(kind, name, ns, scaleQueue, pods)), 0o644); err != nil {
		return err
	}
	log.Printf("%s of %d pods", kind, pods)
	at := func(command string) result { return result{Command: command, Kind: kind, Pods: pods} }
	if err := b.each(at("check"), []string{"check", "-f", file}, nil, b.runs, how{}); err != nil {
		return err
	}
	// submit alone: the same job, in a queue that holds it.
	held := filepath.Join(b.tmp, name+".held.yaml")
	i := 0
	if err := b.repeat(at("submit"), b.runs, func() []string {
		i++
		os.WriteFile(held, []byte(settings(kind, fmt.Sprintf("%s-%d", name, i), heldNamespace, heldQueue, pods)), 0o644)
		return []string{"submit", "-f", held}
	}); err != nil {
		return err
	}
	started := time.Now()
	running := how{until: func(line string) bool { return strings.Contains(line, ": Running") }}
	if err := b.once(at("submit --wait until Running"), b.generator, []string{"submit", "--wait", "-f", file}, running); err != nil {
		return err
	}
	log.Printf("%s of %d pods Running after %s", kind, pods, time.Since(started).Round(time.Second))
	sel := fmt.Sprintf(selector, name)
	for _, c := range []struct {
		command string
		args    []string
		kubectl []string
		runs    int
	}{
		{"status", []string{"status", name, "-n", ns}, nil, b.runs},
		{"status -o json", []string{"status", name, "-n", ns, "-o", "json"}, nil, b.runs},
		{"list", []string{"list", "-n", ns}, []string{"get", "appwrappers,trainjobs,workloads,pods", "-n", ns}, b.runs},
		{"list -A", []string{"list", "-A"}, []string{"get", "appwrappers,trainjobs,workloads,pods", "-A"}, b.runs},
		{"completion", []string{"__complete", "status", "-n", ns, ""}, nil, b.runs},
		// Reading a thousand logs takes minutes: once is enough from 256
		// pods on.
		{"logs", []string{"logs", name, "-n", ns}, []string{"logs", "-n", ns, "-l", sel, "-c", container, "--tail=-1", "--max-log-requests=8"}, map[bool]int{true: 1, false: b.runs}[pods >= 256]},
	} {
		if err := b.each(at(c.command), c.args, c.kubectl, c.runs, how{}); err != nil {
			return err
		}
	}
	// kubectl opens its streams at client-go's default rate, 5 a second,
	// which it has no flag to change: every tool follows long enough for
	// kubectl to have opened them all, each log from its start.
	following := how{for_: b.follow + time.Duration(pods/5)*time.Second}
	if err := b.compare(at("logs -f"), []string{"logs", "-f", name, "-n", ns}, 1, following); err != nil {
		return err
	}
	if err := b.kubectlOnce(at("logs -f"), []string{"logs", "-f", "-n", ns, "-l", sel, "-c", container, "--tail=-1", fmt.Sprintf("--max-log-requests=%d", pods)}, following); err != nil {
		return err
	}
	if err := b.once(at("stop"), b.generator, []string{"stop", name, "-n", ns}, how{}); err != nil {
		return err
	}
	if err := b.waitFor(name+"'s pods gone", 10*time.Minute, func() bool { return b.podCount(sel) == 0 }); err != nil {
		return err
	}
	if err := b.once(at("resume"), b.generator, []string{"resume", name, "-n", ns}, how{}); err != nil {
		return err
	}
	if err := b.waitFor(name+"'s pods back", 10*time.Minute, func() bool { return b.podCount(sel) == pods }); err != nil {
		return err
	}
	if err := b.once(at("delete"), b.generator, []string{"delete", name, "-n", ns}, how{}); err != nil {
		return err
	}
	// The held jobs go, without waiting.
	_, err := b.cluster.Kubectl(nil, "delete", "appwrappers,trainjobs", "--all", "-n", heldNamespace, "--wait=false")
	return err
}

// namespace measures the commands that read many jobs, on a namespace of
// n queued jobs.
func (b *bench) namespace(ctx context.Context, n int) error {
	ns := fmt.Sprintf("scale-jobs-%d", n)
	log.Printf("a namespace of %d jobs", n)
	started := time.Now()
	if err := b.createJobs(ctx, ns, n); err != nil {
		return err
	}
	// Counted from a page of one and the count of the rest the API server
	// gives with it: listing thousands of Workloads every second while
	// Kueue makes them would slow it down.
	if err := b.waitFor(fmt.Sprintf("the %d Workloads of %s", n, ns), 30*time.Minute, func() bool {
		out, err := b.cluster.Kubectl(nil, "get", "--raw", "/apis/kueue.x-k8s.io/v1beta2/namespaces/"+ns+"/workloads?limit=1")
		var page struct {
			Metadata struct {
				RemainingItemCount int `json:"remainingItemCount"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		return err == nil && json.Unmarshal([]byte(out), &page) == nil && len(page.Items)+page.Metadata.RemainingItemCount == n
	}); err != nil {
		return err
	}
	log.Printf("%d jobs made and queued in %s", n, time.Since(started).Round(time.Second))
	at := func(command string) result { return result{Command: command, Jobs: n} }
	for _, c := range []struct {
		command string
		args    []string
		kubectl []string
	}{
		{"list", []string{"list", "-n", ns}, []string{"get", "appwrappers,trainjobs,workloads,pods", "-n", ns}},
		{"list -o json", []string{"list", "-n", ns, "-o", "json"}, []string{"get", "appwrappers,trainjobs,workloads,pods", "-n", ns, "-o", "json"}},
		{"list -A", []string{"list", "-A"}, []string{"get", "appwrappers,trainjobs,workloads,pods", "-A"}},
		{"status", []string{"status", "job-00000", "-n", ns}, nil},
		{"completion", []string{"__complete", "status", "-n", ns, ""}, nil},
	} {
		if err := b.each(at(c.command), c.args, c.kubectl, b.runs, how{}); err != nil {
			return err
		}
	}
	return nil
}

// each measures a command of the generator, of the generator -before if
// given, and kubectl's equivalent if any, runs times each, in rounds that
// run each tool once (so that the machine's drift touches them alike).
func (b *bench) each(r result, args, kubectl []string, runs int, h how) error {
	if err := b.compare(r, args, runs, h); err != nil {
		return err
	}
	if kubectl != nil {
		return b.kubectlEach(r, kubectl, runs, h)
	}
	return nil
}

// compare measures the generator, and the generator -before, in rounds.
func (b *bench) compare(r result, args []string, runs int, h how) error {
	tools := map[string]string{"generator": b.generator}
	if b.before != "" {
		tools["before"] = b.before
	}
	samples := map[string][]sample{}
	for range runs {
		for _, tool := range slices.Sorted(maps.Keys(tools)) {
			s, err := b.runner.run(tools[tool], args, h)
			if err != nil {
				return fmt.Errorf("%s: %w", tool, err)
			}
			samples[tool] = append(samples[tool], s)
		}
	}
	for tool, got := range samples {
		b.add(r, tool, got)
	}
	return nil
}

func (b *bench) kubectlEach(r result, args []string, runs int, h how) error {
	var got []sample
	for range runs {
		s, err := b.runner.run(b.kubectl, args, h)
		if err != nil {
			return fmt.Errorf("kubectl: %w", err)
		}
		got = append(got, s)
	}
	// Counted in a run of its own, but for logs, which would take minutes
	// more (kubectl logs -l asks one list, then one log a pod).
	if r.Command != "logs" {
		requests, err := b.runner.kubectlRequests(b.kubectl, args)
		if err != nil && h.for_ == 0 {
			return err
		}
		r.KubectlRequests = requests
	}
	b.add(r, "kubectl", got)
	return nil
}

func (b *bench) kubectlOnce(r result, args []string, h how) error {
	s, err := b.runner.run(b.kubectl, args, h)
	if err != nil {
		return fmt.Errorf("kubectl: %w", err)
	}
	b.add(r, "kubectl", []sample{s})
	return nil
}

// once measures a command of the generator that changes the cluster: run
// once.
func (b *bench) once(r result, bin string, args []string, h how) error {
	s, err := b.runner.run(bin, args, h)
	if err != nil {
		return err
	}
	b.add(r, "generator", []sample{s})
	return nil
}

// repeat measures a command of the generator whose arguments change from
// run to run.
func (b *bench) repeat(r result, runs int, args func() []string) error {
	var got []sample
	for range runs {
		s, err := b.runner.run(b.generator, args(), how{})
		if err != nil {
			return err
		}
		got = append(got, s)
	}
	b.add(r, "generator", got)
	return nil
}

func (b *bench) add(r result, tool string, samples []sample) {
	r.Tool, r.Samples, r.Median = tool, samples, median(samples)
	if tool != "kubectl" {
		r.KubectlRequests = 0
	}
	b.results = append(b.results, r)
	m := r.Median
	size := fmt.Sprintf("%d pods", r.Pods)
	if r.Jobs > 0 {
		size = fmt.Sprintf("%d jobs", r.Jobs)
	}
	log.Printf("  %-28s %-9s %-10s %-10s %7.3f s %5d requests (%d of logs) %9.1f KB %6.1f MiB", r.Command, tool, r.Kind, size,
		m.Seconds, m.Requests, m.LogRequests, float64(m.Read)/1e3, float64(m.RSSKiB)/1024)
}

// podCount is how many pods of the scale namespace a selector selects.
func (b *bench) podCount(selector string) int {
	out, err := b.cluster.Kubectl(nil, "get", "pods", "-n", e2e.SimScaleNamespace, "-l", selector, "-o", "name")
	if err != nil {
		return -1
	}
	return len(strings.Fields(out))
}

func (b *bench) waitFor(what string, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ready() {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("%s: not after %s", what, timeout)
}

// write writes the results so far: results.json, results.md and the
// plots.
func (b *bench) write(out string) error {
	data, err := json.MarshalIndent(b.results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), data, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(table(b.results)), 0o644); err != nil {
		return err
	}
	return plot(b.results, out)
}

// rewrite writes results.md and the plots again from the folder's
// results.json.
func rewrite(out string) error {
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		return err
	}
	b := &bench{}
	if err := json.Unmarshal(data, &b.results); err != nil {
		return err
	}
	return b.write(out)
}

// sysctl sets a kernel setting (below /proc/sys) for the run, and gives
// what puts it back.
func sysctl(name, value string) (func(), error) {
	path := filepath.Join("/proc/sys", name)
	was, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return nil, fmt.Errorf("setting %s (as root): %w", name, err)
	}
	return func() { os.WriteFile(path, was, 0o644) }, nil
}
