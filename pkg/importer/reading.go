package importer

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/torchwrap/generator/pkg/accelerator"
	"github.com/torchwrap/generator/pkg/cluster"
)

// reading is a job being read into settings: the parts of it the settings
// come from.
type reading struct {
	j      *job
	outer  map[string]any // the metadata of the object submitted: the AppWrapper's, or the bare job's
	meta   map[string]any // the first pod template's metadata
	spec   map[string]any // its pod spec
	main   map[string]any // its training container
	launch launch
	t9k    map[string]any // a T9k job's spec, in the newer spellings (t9kSpec)
	// notes say how a setting was derived, for its comment.
	notes map[string]string
}

// newReading finds the parts of a job the settings come from.
func newReading(j *job) *reading {
	r := &reading{j: j, t9k: t9kSpec(j), notes: map[string]string{}}
	r.outer = mapOf(dig(j.obj.Value, "metadata"))
	var template map[string]any
	if j.kind == "TrainJob" {
		template = trainJobPod(j.inner)
	} else {
		template = j.pods[0].template
	}
	r.meta, r.spec = mapOf(template["metadata"]), mapOf(template["spec"])
	containers := list(r.spec["containers"])
	if len(containers) > 0 {
		r.main = mapOf(containers[0])
	}
	switch {
	case j.kind == "DeepSpeedJob":
	case j.kind == "PyTorchTrainingJob" && dig(r.t9k, "torchrunConfig", "enabled") == true:
		r.launch = launch{program: joinWords(strs(r.main["args"])), note: "T9k's torchrun runs the container's args"}
		config := mapOf(dig(r.t9k, "torchrunConfig"))
		r.launch.torchrun = pick(config, "maxRestarts", "extraOptions").(map[string]any)
		r.launch.nproc = str(config["procPerNode"])
	default:
		r.launch = readLaunch(strs(r.main["command"]), strs(r.main["args"]))
		if dir := str(r.main["workingDir"]); dir != "" {
			r.launch.setup = append([]string{"cd " + joinWords([]string{dir})}, r.launch.setup...)
		}
	}
	return r
}

// trainJobPod is the pod template of a TrainJob's nodes, as far as the
// TrainJob gives it: the trainer's container (node), and the runtime patch
// of the node job's pod template.
func trainJobPod(inner map[string]any) map[string]any {
	trainer := mapOf(dig(inner, "spec", "trainer"))
	container := pick(trainer, "image", "command", "args", "env", "envFrom").(map[string]any)
	if res, ok := trainer["resourcesPerNode"]; ok {
		container["resources"] = res
	}
	pod := map[string]any{}
	for _, patch := range list(dig(inner, "spec", "runtimePatches")) {
		for _, rj := range list(dig(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")) {
			if str(dig(rj, "name")) == "node" {
				pod = mapOf(dig(rj, "template", "spec", "template"))
			}
		}
	}
	spec := map[string]any{}
	maps.Copy(spec, mapOf(pod["spec"]))
	for _, c := range list(spec["containers"]) {
		if str(dig(c, "name")) == "node" {
			maps.Copy(container, pick(c, "volumeMounts", "securityContext").(map[string]any))
		}
	}
	spec["containers"] = []any{container}
	return map[string]any{"metadata": pod["metadata"], "spec": spec}
}

// t9kSpec is a T9k job's spec (a copy) with the older spellings of its
// switches read as the newer: enable as enabled (torchrunConfig, elastic,
// runMode's debug and pause). nil for the other kinds.
func t9kSpec(j *job) map[string]any {
	if j.kind != "PyTorchTrainingJob" && j.kind != "DeepSpeedJob" {
		return nil
	}
	spec := mapOf(deepCopy(dig(j.inner, "spec")))
	for _, p := range [][]string{{"torchrunConfig"}, {"elastic"}, {"runMode", "debug"}, {"runMode", "pause"}} {
		if m, ok := dig(spec, p...).(map[string]any); ok {
			if old, ok := m["enable"]; ok {
				if _, newer := m["enabled"]; !newer {
					m["enabled"] = old
				}
				delete(m, "enable")
			}
		}
	}
	return spec
}

// t9kField reads a field of a T9k job's spec that a setting of the same name
// holds as it is.
func (r *reading) t9kField(field string) (any, bool) {
	v := dig(r.t9k, field)
	return v, v != nil
}

// kueueLabels tells whether the chart puts Kueue's labels on the job: an
// AppWrapper, or a bare job of a kind Kueue integrates.
func (r *reading) kueueLabels() bool {
	return r.j.wrapped || (r.j.kind != "PyTorchTrainingJob" && r.j.kind != "DeepSpeedJob")
}

// customLabels are the submitted object's labels but Kueue's.
func (r *reading) customLabels() map[string]any {
	labels := maps.Clone(mapOf(r.outer["labels"]))
	delete(labels, cluster.QueueLabel)
	delete(labels, cluster.PriorityClassLabel)
	return labels
}

// ownAnnotation tells whether a pod annotation is one a setting other than
// podAnnotations writes.
func (r *reading) ownAnnotation(key string) bool {
	return key == networksNote || key == groupAnnotation ||
		key == topologyPrefix+"required-topology" || key == topologyPrefix+"preferred-topology"
}

// request reads a resource of the training container: its request, else its
// limit (which Kubernetes then copies to the request).
func (r *reading) request(name string) (any, bool) {
	if v := dig(r.main, "resources", "requests", name); v != nil {
		return quantity(name, v), true
	}
	if v := dig(r.main, "resources", "limits", name); v != nil {
		return quantity(name, v), true
	}
	return nil, false
}

// limit reads a limit of the training container that differs from its
// request.
func (r *reading) limit(name string) (any, bool) {
	request := dig(r.main, "resources", "requests", name)
	limit := dig(r.main, "resources", "limits", name)
	if request == nil || limit == nil || sameScalar(request, limit) {
		return nil, false
	}
	return quantity(name, limit), true
}

// quantity is an amount of a resource as a setting takes it: memory as text
// (a size), a count of CPUs or devices as a number when it is a whole one.
func quantity(resource string, v any) any {
	if resource == "memory" {
		return fmt.Sprint(v)
	}
	if s, ok := v.(string); ok {
		if n, err := strconv.Atoi(s); err == nil {
			return float64(n)
		}
	}
	return v
}

// resources are the names of the resources the training container asks
// for, in its limits and its requests.
func (r *reading) resources() []string {
	names := slices.Collect(maps.Keys(mapOf(dig(r.main, "resources", "limits"))))
	for name := range mapOf(dig(r.main, "resources", "requests")) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// accelerator is the accelerator resource of the training container (an
// accelerator.Vendors one), "" when it asks for none.
func (r *reading) accelerator() string { return accelerator.Pick(r.resources()) }

// roceResource is the extended resource of RoCE GDR: the one RDMA resource
// the training container asks for (its name says rdma or roce). Another
// extended resource has no setting: the comparison lists it, not carried.
func (r *reading) roceResource() string {
	var found []string
	for _, name := range r.resources() {
		lower := strings.ToLower(name)
		if strings.Contains(name, "/") && (strings.Contains(lower, "rdma") || strings.Contains(lower, "roce")) {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// env is the literal value of a variable of the training container.
func (r *reading) env(name string) string {
	for _, e := range list(r.main["env"]) {
		if str(dig(e, "name")) == name {
			return str(dig(e, "value"))
		}
	}
	return ""
}

// userEnv are the training container's variables but those the chart sets for
// other settings or for the kind.
func (r *reading) userEnv() []any {
	own := map[string]string{}
	if r.j.kind == "JobSet" {
		own["WORLD_SIZE"] = fmt.Sprint(r.j.numPods())
		own["MASTER_ADDR"] = fmt.Sprintf("%s-node-0-0.%s", str(r.outer["name"]), str(r.outer["name"]))
		own["MASTER_PORT"] = "29500"
	}
	if r.volume(topologyVolume) != nil {
		own["NCCL_TOPO_FILE"] = topologyFile
	}
	if p := r.mountPath(nvmeVolume); p != "" {
		own["NVME_MOUNT_PATH"] = p
	}
	if r.volume(sshKeyVolume) != nil && r.volume(sshHostsVolume) != nil {
		own["GIT_SSH_COMMAND"] = r.env("GIT_SSH_COMMAND")
	}
	if r.debug() {
		for _, p := range debugPreset {
			own[p[0]] = p[1]
		}
	}
	var user []any
	for _, e := range list(r.main["env"]) {
		name := str(dig(e, "name"))
		value, isOwn := own[name]
		switch {
		case isOwn && dig(e, "valueFrom") == nil && str(dig(e, "value")) == value:
		case name == "RANK" && r.j.kind == "JobSet" && dig(e, "valueFrom", "fieldRef") != nil:
		case name == sakkaraRank && str(r.spec["schedulerName"]) == "sakkara":
		default:
			user = append(user, e)
		}
	}
	return user
}

// debug tells whether the container has every variable of distributedDebug.
func (r *reading) debug() bool {
	for _, p := range debugPreset {
		found := false
		for _, e := range list(r.main["env"]) {
			found = found || str(dig(e, "name")) == p[0]
		}
		if !found {
			return false
		}
	}
	return true
}

// volume is the pod's volume of that name; nil when it has none.
func (r *reading) volume(name string) map[string]any {
	for _, v := range list(r.spec["volumes"]) {
		if str(dig(v, "name")) == name {
			return mapOf(v)
		}
	}
	return nil
}

// mount is the training container's mount of the volume; nil when none.
func (r *reading) mount(name string) map[string]any {
	for _, m := range list(r.main["volumeMounts"]) {
		if str(dig(m, "name")) == name {
			return mapOf(m)
		}
	}
	return nil
}

// mountPath is where the training container mounts the volume; "" for none.
func (r *reading) mountPath(name string) string { return str(r.mount(name)["mountPath"]) }

// shm is the memory-backed volume mounted at /dev/shm; nil when none.
func (r *reading) shm() map[string]any {
	for _, m := range list(r.main["volumeMounts"]) {
		v := r.volume(str(dig(m, "name")))
		if str(dig(m, "mountPath")) == "/dev/shm" && dig(v, "emptyDir", "medium") == "Memory" {
			return v
		}
	}
	return nil
}

// hostExpression is the node affinity's expression that keeps the pods off
// named nodes (hostIgnoreList).
func (r *reading) hostExpression() map[string]any {
	terms := list(dig(r.spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"))
	for _, t := range terms {
		for _, e := range list(dig(t, "matchExpressions")) {
			if str(dig(e, "key")) == "kubernetes.io/hostname" && str(dig(e, "operator")) == "NotIn" {
				return mapOf(e)
			}
		}
	}
	return nil
}

// gpus is the GPUs of the training container.
func (r *reading) gpus() int {
	v, _ := r.request(r.accelerator())
	n, _ := strconv.Atoi(fmt.Sprint(v))
	return n
}

// processesPerPod is what the chart gives torchrun and the deepspeed launcher
// when nothing says otherwise: one process per GPU, one without.
func (r *reading) processesPerPod() int { return max(1, r.gpus()) }

// deepspeedRun is a DeepSpeedJob's config.run: how it launches (python,
// module or exec) and its words.
func (r *reading) deepspeedRun() (string, any) {
	run := mapOf(dig(r.j.inner, "spec", "config", "run"))
	for _, launch := range []string{"python", "module", "exec"} {
		if words, ok := run[launch]; ok {
			return launch, words
		}
	}
	return "python", nil
}
