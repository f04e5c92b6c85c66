package local

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/torchwrap/generator/pkg/accelerator"
	"github.com/torchwrap/generator/schema"
)

// Options say where the job's pods run and what stands for the cluster's
// objects.
type Options struct {
	// Dir is the run's folder: a folder per pod (its working folder, with
	// its own tmp), and one per emptyDir or ephemeral volume.
	Dir string
	// Source is the folder whose files each pod's working folder links to,
	// as an image's files are in its working folder: the user's project;
	// "" for none (a job that ships its workspace unpacks it there).
	Source string
	// ConfigMaps are ConfigMaps the run makes itself, by name: those that
	// carry a workspace.
	ConfigMaps map[string]map[string]string
	// Maps are the local folders and files that stand for the claims,
	// Secrets and ConfigMaps the job reads: "pvc/NAME", "secret/NAME",
	// "configmap/NAME" to a path. A Secret's or ConfigMap's path is a
	// folder with a file per key, or a file of KEY=VALUE lines.
	Maps map[string]string
	// Cluster, when set, reads the Secrets and ConfigMaps that Maps does
	// not give.
	Cluster KeyedData
}

// Plan is how a job's pods run here: each pod's processes, and where its
// volumes are.
type Plan struct {
	Pods []PodPlan
	// Notes say what differs from the cluster, for the user to read before
	// the output.
	Notes []string
	// links are the mount paths made for the run: each a link to a folder;
	// writes, the Secrets and ConfigMaps of KEY=VALUE lines written out as
	// folders.
	links  []link
	writes []write
	source string
}

// PodPlan is a pod's processes: its init containers, in turn, then its
// containers, at once.
type PodPlan struct {
	Pod
	Dir        string
	Init, Main []Process
}

// Process is a container as a process: its command line, its variables
// (beside the user's own) and its folder.
type Process struct {
	Container string
	Argv, Env []string
	Dir       string
	// Unset are the variables of optional keys not given, which stay
	// unset: NAME (the secret "hf").
	Unset []string
}

// link is a mount path made as a link to a folder of this machine.
type link struct{ path, target string }

// write is a folder to write with a file per key.
type write struct {
	dir    string
	values map[string]string
}

// Prepare plans the pods' processes. It refuses, with every reason at
// once, what cannot run here: a claim, Secret or ConfigMap not mapped, two
// volumes at one mount path, a container without a command. It stops at
// the first error of the cluster that Options.Cluster reads from.
func Prepare(ctx context.Context, pods []Pod, o Options) (*Plan, error) {
	p := &Plan{source: o.Source}
	data := mapped{maps: o.Maps, cluster: o.Cluster, given: o.ConfigMaps}
	addresses := map[string]string{}
	for i, pod := range pods {
		for _, name := range pod.Names {
			addresses[name] = address(i)
		}
	}
	var problems []string
	problem := func(text string) {
		if !slices.Contains(problems, text) {
			problems = append(problems, text)
		}
	}
	mounts := map[string]string{}
	for i, pod := range pods {
		pp := PodPlan{Pod: pod, Dir: filepath.Join(o.Dir, pod.Label())}
		ip := address(i)
		pod.Pod.Status.PodIP, pod.Pod.Status.HostIP = ip, "127.0.0.1"
		pod.Pod.Status.PodIPs, pod.Pod.Status.HostIPs = []corev1.PodIP{{IP: ip}}, []corev1.HostIP{{IP: "127.0.0.1"}}
		pod.Pod.Spec.NodeName = "localhost"
		sources, missing, err := p.volumes(ctx, pod, o, data)
		if err != nil {
			return nil, err
		}
		for _, text := range missing {
			problem(text)
		}
		for _, group := range []struct {
			containers []corev1.Container
			to         *[]Process
		}{{pod.Pod.Spec.InitContainers, &pp.Init}, {pod.Pod.Spec.Containers, &pp.Main}} {
			for _, c := range group.containers {
				proc, err := process(ctx, data, pod, c, pp.Dir, addresses)
				var read clusterError
				if errors.As(err, &read) {
					return nil, read.err
				}
				if err != nil {
					problem(err.Error())
					continue
				}
				for _, m := range c.VolumeMounts {
					source, ok := sources[m.Name]
					if !ok || m.MountPath == "/dev/shm" {
						continue
					}
					source = filepath.Join(source, m.SubPath)
					if other, ok := mounts[m.MountPath]; ok && other != source {
						problem(fmt.Sprintf("%s mounts two things at %s (%s and %s), which this run cannot: pods share this machine's files", pod.Label(), m.MountPath, other, source))
					}
					mounts[m.MountPath] = source
				}
				*group.to = append(*group.to, proc)
			}
		}
		p.Pods = append(p.Pods, pp)
	}
	for _, path := range slices.Sorted(maps.Keys(mounts)) {
		p.links = append(p.links, link{path: path, target: mounts[path]})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the job cannot run here, and nothing was started:\n  %s", strings.Join(problems, "\n  "))
	}
	p.Notes = notes(pods, p.links)
	var unsetVars []string
	for _, pod := range p.Pods {
		for _, proc := range append(slices.Clone(pod.Init), pod.Main...) {
			for _, u := range proc.Unset {
				if !slices.Contains(unsetVars, u) {
					unsetVars = append(unsetVars, u)
				}
			}
		}
	}
	if len(unsetVars) > 0 {
		p.Notes = append(p.Notes, "optional and not given here, so unset: "+strings.Join(unsetVars, ", "))
	}
	return p, nil
}

// address is pod i's address: one of the loopback range (127.0.1.x) on
// Linux, where all of it reaches this machine; 127.0.0.1 elsewhere.
func address(i int) string {
	if runtime.GOOS != "linux" {
		return "127.0.0.1"
	}
	return fmt.Sprintf("127.0.1.%d", i+1)
}

// volumes are the local folders of the pod's volumes, by name: an
// emptyDir or ephemeral volume a folder of the run (one for every pod
// that has it), a claim, Secret or ConfigMap the path it is mapped to
// (a Secret or ConfigMap of KEY=VALUE lines written out as a folder), a
// hostPath itself. An emptyDir at /dev/shm is the machine's /dev/shm.
func (p *Plan) volumes(ctx context.Context, pod Pod, o Options, data mapped) (map[string]string, []string, error) {
	sources := map[string]string{}
	var problems []string
	for _, v := range pod.Pod.Spec.Volumes {
		switch {
		case v.EmptyDir != nil, v.Ephemeral != nil:
			sources[v.Name] = filepath.Join(o.Dir, "volumes", v.Name)
		case v.HostPath != nil:
			sources[v.Name] = v.HostPath.Path
		case v.PersistentVolumeClaim != nil:
			claim := v.PersistentVolumeClaim.ClaimName
			path, ok := o.Maps["pvc/"+claim]
			if !ok {
				problems = append(problems, fmt.Sprintf("the claim %q (volume %s, mounted at %s) is not here: map it to a folder with --map pvc/%s=DIR",
					claim, v.Name, mountPaths(pod, v.Name), claim))
				continue
			}
			sources[v.Name] = path
		case v.Projected != nil:
			dir, missing, err := p.projected(ctx, pod, v, o, data)
			if err != nil {
				return nil, nil, err
			}
			problems = append(problems, missing...)
			sources[v.Name] = dir
		case v.Secret != nil, v.ConfigMap != nil:
			kind, name, optional := "secret", "", false
			if v.Secret != nil {
				name, optional = v.Secret.SecretName, isTrue(v.Secret.Optional)
			} else {
				kind, name, optional = "configmap", v.ConfigMap.Name, isTrue(v.ConfigMap.Optional)
			}
			if path, ok := o.Maps[kind+"/"+name]; ok {
				if info, err := os.Stat(path); err == nil && info.IsDir() {
					sources[v.Name] = path
					continue
				}
			}
			values, err := data.get(ctx, kind, pod.Pod.Namespace, name)
			var read clusterError
			switch {
			case errors.As(err, &read):
				return nil, nil, read.err
			case err != nil:
				problems = append(problems, err.Error())
			case values == nil && !optional:
				problems = append(problems, fmt.Sprintf("the %s %q (volume %s, mounted at %s) is not here: %s", kind, name, v.Name, mountPaths(pod, v.Name), mapHint(kind, name)))
			default:
				sources[v.Name] = filepath.Join(o.Dir, "volumes", v.Name)
				p.writes = append(p.writes, write{sources[v.Name], values})
			}
		default:
			problems = append(problems, fmt.Sprintf("the volume %s of %s is of a kind this run does not make here", v.Name, pod.Label()))
		}
	}
	return sources, problems, nil
}

// projected places a projected volume of ConfigMaps (a workspace's) as
// one folder of their keys; what it cannot place is a problem.
func (p *Plan) projected(ctx context.Context, pod Pod, v corev1.Volume, o Options, data mapped) (string, []string, error) {
	dir := filepath.Join(o.Dir, "volumes", v.Name)
	var problems []string
	for _, source := range v.Projected.Sources {
		if source.ConfigMap == nil {
			problems = append(problems, fmt.Sprintf("the volume %s of %s projects what this run does not make here: only ConfigMaps", v.Name, pod.Label()))
			continue
		}
		name := source.ConfigMap.Name
		values, err := data.get(ctx, "configmap", pod.Pod.Namespace, name)
		var read clusterError
		switch {
		case errors.As(err, &read):
			return "", nil, read.err
		case err != nil:
			problems = append(problems, err.Error())
		case values == nil && !isTrue(source.ConfigMap.Optional):
			problems = append(problems, fmt.Sprintf("the configmap %q (volume %s, mounted at %s) is not here: %s", name, v.Name, mountPaths(pod, v.Name), mapHint("configmap", name)))
		default:
			p.writes = append(p.writes, write{dir, values})
		}
	}
	return dir, problems, nil
}

// mountPaths are where the pod's containers mount a volume.
func mountPaths(pod Pod, volume string) string {
	var paths []string
	for _, c := range append(slices.Clone(pod.Pod.Spec.InitContainers), pod.Pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if m.Name == volume && !slices.Contains(paths, m.MountPath) {
				paths = append(paths, m.MountPath)
			}
		}
	}
	return cmp.Or(strings.Join(paths, ", "), "no path")
}

// mapHint says how to give a Secret or ConfigMap.
func mapHint(kind, name string) string {
	return fmt.Sprintf("map it with --map %s/%s=PATH (a folder with a file per key, or a file of KEY=VALUE lines), or read it from the cluster with --from-cluster", kind, name)
}

// process is a container as a process: its variables as the kubelet
// gives them, with the pods' names given as their addresses; its command
// and arguments with $(VAR) put in.
func process(ctx context.Context, data mapped, pod Pod, c corev1.Container, dir string, addresses map[string]string) (Process, error) {
	who := fmt.Sprintf("%s (container %s)", pod.Label(), c.Name)
	if len(c.Command) == 0 {
		return Process{}, fmt.Errorf("%s has no command: it runs its image's entrypoint, which this machine does not have", who)
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)}
	env, err := ContainerEnv(ctx, data, pod.Pod, &c, allocatable)
	if err != nil {
		var missing NotFoundError
		if errors.As(err, &missing) {
			return Process{}, fmt.Errorf("%s reads the %s %q, which is not here: %s", who, missing.Kind, missing.Name, mapHint(missing.Kind, missing.Name))
		}
		return Process{}, fmt.Errorf("%s: %w", who, err)
	}
	proc := Process{Container: c.Name, Dir: dir, Unset: unset(c, env)}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		env[name] = rename(env[name], addresses)
		proc.Env = append(proc.Env, name+"="+env[name])
	}
	for _, word := range append(slices.Clone(c.Command), c.Args...) {
		proc.Argv = append(proc.Argv, Expand(word, env))
	}
	if c.WorkingDir != "" {
		if info, err := os.Stat(c.WorkingDir); err == nil && info.IsDir() {
			proc.Dir = c.WorkingDir
		}
	}
	return proc, nil
}

// unset are the container's variables from an optional key of a Secret or
// ConfigMap that is not given.
func unset(c corev1.Container, env map[string]string) []string {
	var names []string
	for _, e := range c.Env {
		if _, ok := env[e.Name]; ok || e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			names = append(names, fmt.Sprintf("%s (key %s of the secret %q)", e.Name, ref.Key, ref.Name))
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			names = append(names, fmt.Sprintf("%s (key %s of the configmap %q)", e.Name, ref.Key, ref.Name))
		}
	}
	return names
}

// rename gives the names of pods in a value as their addresses: each run
// of a host name's characters that is a pod's name.
func rename(s string, addresses map[string]string) string {
	hostChar := func(b byte) bool {
		return b == '-' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && hostChar(s[j]) {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(cmp.Or(addresses[s[i:j]], s[i:j]))
		i = j
	}
	return b.String()
}

// mapped reads Secrets and ConfigMaps from the paths of --map, else from
// the cluster when one is given.
type mapped struct {
	maps    map[string]string
	cluster KeyedData
	given   map[string]map[string]string
}

func (m mapped) ConfigMap(ctx context.Context, namespace, name string) (map[string]string, error) {
	return m.get(ctx, "configmap", namespace, name)
}

func (m mapped) Secret(ctx context.Context, namespace, name string) (map[string]string, error) {
	return m.get(ctx, "secret", namespace, name)
}

func (m mapped) get(ctx context.Context, kind, namespace, name string) (map[string]string, error) {
	if _, ok := m.maps[kind+"/"+name]; ok {
		return m.read(kind, name)
	}
	if values, ok := m.given[name]; ok && kind == "configmap" {
		return values, nil
	}
	var values map[string]string
	var err error
	switch {
	case m.cluster == nil:
	case kind == "secret":
		values, err = m.cluster.Secret(ctx, namespace, name)
	default:
		values, err = m.cluster.ConfigMap(ctx, namespace, name)
	}
	if err != nil {
		return nil, clusterError{err}
	}
	return values, nil
}

// clusterError is the cluster's failure to answer: Prepare stops with it.
type clusterError struct{ err error }

func (e clusterError) Error() string { return e.err.Error() }

// read reads a mapped Secret or ConfigMap: a folder, a file per key; or a
// file of KEY=VALUE lines (# starts a comment). nil when it is not mapped.
func (m mapped) read(kind, name string) (map[string]string, error) {
	path, ok := m.maps[kind+"/"+name]
	if !ok {
		return nil, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--map %s/%s=%s: %w", kind, name, path, err)
	}
	values := map[string]string{}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				data, err := os.ReadFile(filepath.Join(path, e.Name()))
				if err != nil {
					return nil, err
				}
				values[e.Name()] = string(data)
			}
		}
		return values, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for n := 1; lines.Scan(); n++ {
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("--map %s/%s=%s, line %d: not KEY=VALUE; write one key a line, or map a folder with a file per key", kind, name, path, n)
		}
		values[strings.TrimSpace(key)] = v
	}
	return values, lines.Err()
}

// notes say what differs here from the cluster.
func notes(pods []Pod, links []link) []string {
	var n []string
	asked, vendor := 0, accelerator.Vendors[0]
	for _, p := range pods {
		for _, c := range p.Pod.Spec.Containers {
			name, q := accelerator.In(c.Resources.Limits)
			if int(q.Value()) > asked {
				asked = int(q.Value())
				vendor, _ = accelerator.Of(string(name))
			}
		}
	}
	if note := gpuNote(vendor.Name, asked, len(pods), vendor.Here()); note != "" {
		n = append(n, note)
	}
	n = append(n, fmt.Sprintf("each pod is at an address of the loopback range (%s for %s), and the pods' names in their variables are given as those addresses", pods[0].Pod.Status.PodIP, pods[0].Label()))
	shared := []string{"/dev/shm"}
	for _, l := range links {
		shared = append(shared, l.path)
	}
	verb := "are"
	if len(shared) == 1 {
		verb = "is"
	}
	return append(n, fmt.Sprintf("the pods share this machine's network and files: %s %s one for all pods; no namespaces isolate them", strings.Join(shared, ", "), verb))
}

// gpuNote says how the job's accelerators, devices of a vendor (asked a
// pod, of pods), meet this machine's (here): none, fewer, enough.
func gpuNote(device string, asked, pods, here int) string {
	switch {
	case asked == 0:
		return ""
	case here == 0:
		return fmt.Sprintf("no %s here (the job asks %d a pod): its processes run on CPU, so the program must choose a backend that runs there (gloo)", device, asked)
	case here < asked*pods:
		return fmt.Sprintf("this machine has %s, fewer than the job's %d (%d a pod): every pod sees all of them, so fewer processes may be needed (--set torchrun.nprocPerNode=1, --pods 1)", schema.Count(here, device), asked*pods, asked)
	}
	return fmt.Sprintf("the pods share this machine's %s (the job asks %d a pod): every pod sees all of them", schema.Count(here, device), asked)
}
