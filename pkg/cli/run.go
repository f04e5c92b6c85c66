package cli

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/failure"
	"github.com/torchwrap/generator/pkg/local"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// runFlags are generator run's own flags.
type runFlags struct {
	in          inputFlags
	kube        cluster.Flags
	local       bool
	pods        int
	timeout     time.Duration
	dir         string
	maps        []string
	fromCluster bool
}

func newRun(s Streams) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --local [-f] settings.yaml",
		Short: "Run the job's pods as processes of this machine, to find its mistakes before it queues for GPUs",
		Long: fmt.Sprintf(`run --local renders the job as render does and runs its pods here, as
processes of this machine, before the job waits in a queue for GPUs: each
pod's init containers, then its containers (the launch script, its setup
commands and torchrun), with the variables the kind's controller and the
kubelet give them. Nothing is sent to a cluster.

It runs this machine's programs, not the image: python, torchrun and your
libraries must be here (a virtual environment's PATH is kept). Each pod runs
in a folder of its own (with its own TMPDIR), which links to the files of the
folder run starts in, as an image's files are in its working folder: your
program is found there, and what a pod writes beside it is its own. Each pod
is at an address of the loopback range, and the pods' names in their variables are
given as those addresses. Without GPUs, torchrun starts the pods' processes
on CPU, and the program must choose a backend that runs there (gloo).
The pods share this machine's network and files: a volume's mount path is
made as a link to a folder here for the run, and removed after it. A claim,
Secret or ConfigMap the job reads must be mapped with --map, or the run
refuses to start; a Secret is read from the cluster only with --from-cluster.

With --workspace, the pods' folders start empty, and each pod's launch script
unpacks the packed folder there, as it does in the cluster: what the ignore
files or the secrets rule leave out is not there either.

The pods' output is written as generator logs writes it, each line after
its pod's role and index; torchrun is given --tee 2 (PET_TEE), so each
process's errors come after its local rank ([default1]:). When a container
fails, the other pods have %s to end on their own and say their own
failures (the pod whose rank failed first may end after those that lost
it), then every pod is stopped and the run says which rank failed and why,
and how the other pods failed after it; its exit code is then 1. Ctrl-C
stops every process the pods started.`, failure.CauseGrace),
		Example: `  generator run --local -f settings.yaml
  generator run --local -f settings.yaml --pods 2 --set torchrun.nprocPerNode=1
  generator run --local -f settings.yaml --map pvc/my-data=./data --map secret/hf-token=./token.env
  generator run --local -f settings.yaml --timeout 2m
  generator run --local -f settings.yaml --workspace .`,
		Annotations: map[string]string{
			consequence: "nothing was run",
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return settings.UsageError{Err: errors.New("run takes one job: pass one settings file, or merge several with -f, as in: -f base.yaml -f job.yaml")}
			}
			f.in.files = append(f.in.files, args...)
			return f.run(cmd.Context(), s)
		}),
	}
	f.in.register(cmd)
	f.in.registerWorkspace(cmd)
	flags := cmd.Flags()
	flags.BoolVar(&f.local, "local", false, "run the job's pods as processes of this machine (the only place run runs them)")
	flags.IntVar(&f.pods, "pods", 0, "run at most this many pods (numPods, and an elastic job's minPods and maxPods, capped); 0 runs the job's own count")
	flags.DurationVar(&f.timeout, "timeout", 0, "stop every pod after this long, and fail (0: no limit)")
	flags.StringVar(&f.dir, "dir", "", "the run's folder, which must be new or empty (default: a new folder in the system's temporary folder)")
	flags.StringArrayVar(&f.maps, "map", nil, "a local folder or file for a claim, Secret or ConfigMap the job reads: pvc/NAME=DIR, secret/NAME=PATH, configmap/NAME=PATH (PATH a folder with a file per key, or a file of KEY=VALUE lines); repeat for each")
	flags.BoolVar(&f.fromCluster, "from-cluster", false, "read the Secrets and ConfigMaps not given with --map from the cluster of the kubeconfig")
	f.kube.Register(flags)
	return cmd
}

func (f *runFlags) run(ctx context.Context, s Streams) error {
	if !f.local {
		return settings.UsageError{Err: errors.New("generator run runs a job's pods on this machine, and needs --local to say so; to run the job on a cluster: generator submit --wait -f settings.yaml")}
	}
	if err := local.Supported(); err != nil {
		return err
	}
	if f.pods < 0 {
		return settings.UsageError{Err: fmt.Errorf("--pods %d: give 1 or more pods, or 0 for the job's own count", f.pods)}
	}
	if f.timeout < 0 {
		return settings.UsageError{Err: fmt.Errorf("--timeout %s: give a duration of 0 (no limit) or more, such as 10m", f.timeout)}
	}
	maps, err := parseMaps(f.maps)
	if err != nil {
		return err
	}
	// The job's namespace: the settings', else (from the cluster) -n or
	// the context's, as submit places it.
	namespace := "default"
	var client *cluster.Client
	if f.fromCluster {
		if client, err = dial(s, &f.kube); err != nil {
			return err
		}
		namespace = client.Namespace
	}
	var result *renderedJob
	if result, err = f.render(s, namespace); err != nil {
		return err
	}
	pods, err := local.Pods(result.job)
	if err != nil {
		return err
	}
	project, err := os.Getwd()
	if err != nil {
		return err
	}
	opts := local.Options{Maps: maps, Source: project}
	folders := fmt.Sprintf("each pod runs in a folder of its own, which links to the files of %s, as an image's are in its working folder", project)
	if ws := f.in.packed; ws != nil {
		opts.Source, opts.ConfigMaps = "", carried(result.job)
		folders = fmt.Sprintf("each pod runs in a folder of its own, empty, where its launch script unpacks the workspace of %s as it does in the cluster", ws.Folder)
	}
	if client != nil {
		opts.Cluster = client
	}
	release, err := local.HoldMachine(filepath.Join(os.TempDir(), "generator-run-local.lock"), result.name, func(holder string) {
		fmt.Fprintf(s.Err, "waiting for the other run of this machine (%s) to end: the pods of two runs would share its ports and mount paths; Ctrl-C stops waiting\n",
			cmp.Or(holder, "another generator run --local"))
	})
	if err != nil {
		return err
	}
	defer release()
	dir, made, err := runDir(f.dir, result.job.Inner.GetName())
	if err != nil {
		return err
	}
	opts.Dir = dir
	plan, err := local.Prepare(ctx, pods, opts)
	if err != nil {
		if made {
			os.RemoveAll(dir)
		}
		return err
	}
	fmt.Fprintf(s.Err, "%s (%d pods) runs here, as processes of this machine: its programs stand for the image %s; the pods' folders are in %s\n",
		result.name, len(pods), strings.Join(images(pods), ", "), dir)
	fmt.Fprintln(s.Err, "  "+folders)
	for _, note := range append(result.notes, plan.Notes...) {
		fmt.Fprintln(s.Err, "  "+note)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	w := logWriter{w: s.Out, color: terminalWidth(s.Out) > 0 && os.Getenv("NO_COLOR") == ""}
	setupFailed := map[string]bool{}
	failures, err := plan.Run(ctx, w.line, func(e failure.SetupError) {
		setupFailed[e.Pod] = true
		fmt.Fprintln(s.Err, e)
	}, failure.CauseGrace, local.Grace)
	failed := failure.Attempt{Number: 1, Failures: failures}
	switch root, ok := failed.Root(); {
	case err != nil:
		return err
	case ok:
		fmt.Fprintf(s.Err, "%s failed here: %s\n", result.name, failed.Why())
		for _, line := range root.Excerpt() {
			fmt.Fprintln(s.Err, "  | "+line)
		}
		return fmt.Errorf("the job failed; every pod was stopped, and their folders are in %s", dir)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the job ran longer than --timeout %s; every pod was stopped", f.timeout)
	case ctx.Err() != nil:
		return stopped{"stopped: every pod's processes were ended"}
	}
	fmt.Fprintf(s.Err, "%s succeeded here: %s", result.name, schema.Count(len(pods), "pod"))
	if n := len(setupFailed); n > 0 {
		fmt.Fprintf(s.Err, ", though a setup command failed in %d of them (above)", n)
	}
	fmt.Fprintln(s.Err)
	return nil
}

// renderedJob is the job run renders, with what it says of it.
type renderedJob struct {
	job  *cluster.Job
	name string
	// notes are what --pods changed.
	notes []string
}

// render renders the job, with --pods capping its pods.
func (f *runFlags) render(s Streams, namespace string) (*renderedJob, error) {
	_, result, err := f.in.render(s)
	if err != nil {
		return nil, err
	}
	var notes []string
	if n := int(cluster.Count(result.Values, "numPods")); f.pods > 0 && n > f.pods {
		f.in.sets = append(f.in.sets, fmt.Sprintf("numPods=%d", f.pods))
		if elastic, ok := result.Values["elastic"].(map[string]any); ok {
			for _, key := range []string{"minPods", "maxPods"} {
				if int(cluster.Count(elastic, key)) > f.pods {
					f.in.sets = append(f.in.sets, fmt.Sprintf("elastic.%s=%d", key, f.pods))
				}
			}
		}
		f.in.holdWarnings = true
		if _, result, err = f.in.render(s); err != nil {
			return nil, err
		}
		notes = append(notes, fmt.Sprintf("--pods %d: %d of the job's %d pods run", f.pods, f.pods, n))
	}
	ns, _ := result.Values["namespace"].(string)
	job, err := cluster.NewJob(result.Manifest, cmp.Or(ns, namespace))
	if err != nil {
		return nil, err
	}
	job.Carry(result.ConfigMaps)
	return &renderedJob{job: job, name: job.Inner.GetKind() + " " + job.Inner.GetName(), notes: notes}, nil
}

// carried are the data of the ConfigMaps that carry a job's workspace, by
// name, for the run to make.
func carried(job *cluster.Job) map[string]map[string]string {
	given := map[string]map[string]string{}
	for _, cm := range job.Workspace {
		data := map[string]string{}
		encoded, _, _ := unstructured.NestedStringMap(cm.Object, "binaryData")
		for key, value := range encoded {
			b, err := base64.StdEncoding.DecodeString(value)
			if err != nil {
				panic(fmt.Sprintf("the workspace's ConfigMap %s was encoded here: %v", cm.GetName(), err))
			}
			data[key] = string(b)
		}
		given[cm.GetName()] = data
	}
	return given
}

// images are the images of the pods' containers.
func images(pods []local.Pod) []string {
	var list []string
	for _, p := range pods {
		for _, c := range append(slices.Clone(p.Pod.Spec.InitContainers), p.Pod.Spec.Containers...) {
			if c.Image != "" && !slices.Contains(list, c.Image) {
				list = append(list, c.Image)
			}
		}
	}
	return list
}

// parseMaps reads --map KIND/NAME=PATH: each path made absolute, and
// there.
func parseMaps(flags []string) (map[string]string, error) {
	maps := map[string]string{}
	for _, flag := range flags {
		key, path, ok := strings.Cut(flag, "=")
		kind, name, named := strings.Cut(key, "/")
		if !ok || !named || name == "" || path == "" || !slices.Contains([]string{"pvc", "secret", "configmap"}, kind) {
			return nil, settings.UsageError{Err: fmt.Errorf("--map %s: write KIND/NAME=PATH, KIND one of pvc, secret, configmap, as in --map pvc/my-data=./data", flag)}
		}
		abs, err := filepath.Abs(path)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			return nil, settings.UsageError{Err: fmt.Errorf("--map %s: %v", flag, err)}
		}
		if kind == "pvc" {
			if info, _ := os.Stat(abs); !info.IsDir() {
				return nil, settings.UsageError{Err: fmt.Errorf("--map %s: a claim is mapped to a folder, and %s is a file", flag, path)}
			}
		}
		if _, dup := maps[key]; dup {
			return nil, settings.UsageError{Err: fmt.Errorf("--map %s: %s is mapped twice", flag, key)}
		}
		maps[key] = abs
	}
	return maps, nil
}

// runDir is the run's folder: --dir, which must be new or empty, else a
// new one in the temporary folder; made tells whether run made it.
func runDir(dir, job string) (string, bool, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "generator-run-"+job+"-")
		return d, err == nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return abs, true, os.MkdirAll(abs, 0o755)
	case err != nil:
		return "", false, settings.UsageError{Err: fmt.Errorf("--dir %s: %v", dir, err)}
	case len(entries) > 0:
		return "", false, settings.UsageError{Err: fmt.Errorf("--dir %s: the folder is not empty; give a new or empty folder, so that nothing in it is overwritten", dir)}
	}
	return abs, false, nil
}
