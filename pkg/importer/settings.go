package importer

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

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

// The names, paths and values the chart gives what it adds to the pod, which
// import reads back into the settings that add them.
const (
	topologyVolume   = "topology-volume"
	topologyPath     = "/var/run/nvidia-topologyd"
	topologyFile     = topologyPath + "/virtualTopology.xml"
	nvmeVolume       = "ephemeral-odf-lvm-vg1"
	nvmePath         = "/workspace/scratch-nvme"
	nvmeClass        = "odf-lvm-vg1"
	sshKeyVolume     = "private-ssh-git-deploy-key"
	sshHostsVolume   = "github-known-hosts"
	sshKeyPath       = "/tmp/.ssh/keys"
	sshHostsPath     = "/tmp/.ssh/hosts"
	gpuResource      = "nvidia.com/gpu"
	roceResource     = "nvidia.com/roce_gdr"
	networksNote     = "k8s.v1.cni.cncf.io/networks"
	groupAnnotation  = "kueue.x-k8s.io/podset-group-name"
	topologyPrefix   = "kueue.x-k8s.io/podset-"
	appWrapperPrefix = "workload.codeflare.dev.appwrapper/"
	sakkaraRank      = "SAKKARA_RANK"
)

// debugPreset is distributedDebug's variables, in the chart's order.
var debugPreset = [][2]string{
	{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,NET"}, {"TORCH_DISTRIBUTED_DEBUG", "DETAIL"},
	{"TORCH_CPP_LOG_LEVEL", "INFO"}, {"TORCH_SHOW_CPP_STACKTRACES", "1"}, {"LOGLEVEL", "INFO"}, {"PYTHONFAULTHANDLER", "1"},
}

// readers derive each setting from the job: a value, or false for a setting
// left out (its default). Every key of the schema has one (a test checks it),
// so that a setting render learns cannot be missed here.
var readers = map[string]func(r *reading) (any, bool){
	"jobKind": func(r *reading) (any, bool) { return r.j.kind, true },
	"wrapper": func(r *reading) (any, bool) {
		if r.j.wrapped {
			return "AppWrapper", true
		}
		return "none", true
	},
	"jobName": func(r *reading) (any, bool) {
		if name := str(r.outer["name"]); name != "" {
			return name, true
		}
		if prefix := strings.TrimRight(str(r.outer["generateName"]), "-."); prefix != "" {
			r.notes["jobName"] = "from metadata.generateName: the generator gives the job a name of its own"
			return prefix, true
		}
		return nil, false
	},
	"trainingRuntime": func(r *reading) (any, bool) {
		name := str(dig(r.j.inner, "spec", "runtimeRef", "name"))
		return name, name != "" && name != "torch-distributed"
	},
	"namespace": func(r *reading) (any, bool) { return present(str(r.outer["namespace"])) },
	"queueName": func(r *reading) (any, bool) {
		if !r.kueueLabels() {
			r.notes["queueName"] = "Kueue does not queue a bare T9k job"
			return nil, true
		}
		if q := str(dig(r.outer, "labels", cluster.QueueLabel)); q != "" {
			return q, true
		}
		r.notes["queueName"] = "the job names no LocalQueue (label " + cluster.QueueLabel + ")"
		return nil, true
	},
	"priority": func(r *reading) (any, bool) {
		if p := str(r.spec["priorityClassName"]); p != "" {
			return p, true
		}
		return nil, true
	},
	"workloadPriorityClass": func(r *reading) (any, bool) {
		return present(str(dig(r.outer, "labels", cluster.PriorityClassLabel)))
	},
	"customLabels": func(r *reading) (any, bool) {
		var labels []any
		for _, k := range sortedKeys(r.customLabels()) {
			labels = append(labels, map[string]any{"key": k, "value": r.customLabels()[k]})
		}
		return labels, labels != nil
	},
	"containerImage": func(r *reading) (any, bool) { return present(str(r.main["image"])) },
	"imagePullSecrets": func(r *reading) (any, bool) {
		return r.spec["imagePullSecrets"], r.spec["imagePullSecrets"] != nil
	},
	"imagePullPolicy": func(r *reading) (any, bool) {
		if r.j.kind == "TrainJob" {
			return nil, false
		}
		if p := str(r.main["imagePullPolicy"]); p != "" {
			return p, true
		}
		if latest(str(r.main["image"])) {
			r.notes["imagePullPolicy"] = "Kubernetes' default for an image without a tag or tagged latest"
			return "Always", true
		}
		return nil, false
	},
	"numPods": func(r *reading) (any, bool) {
		if r.j.kind == "PyTorchJob" && len(r.j.pods) > 1 {
			r.notes["numPods"] = fmt.Sprintf("Master %d + Worker %d", r.j.pods[0].replicas, r.j.pods[1].replicas)
		}
		return float64(r.j.numPods()), true
	},
	"numCpusPerPod":     func(r *reading) (any, bool) { return r.request("cpu") },
	"numGpusPerPod":     func(r *reading) (any, bool) { return r.request(gpuResource) },
	"totalMemoryPerPod": func(r *reading) (any, bool) { return r.request("memory") },
	"limitCpusPerPod":   func(r *reading) (any, bool) { return r.limit("cpu") },
	"limitGpusPerPod":   func(r *reading) (any, bool) { return r.limit(gpuResource) },
	"limitMemoryPerPod": func(r *reading) (any, bool) { return r.limit("memory") },
	"roceGdrResName": func(r *reading) (any, bool) {
		name := r.roceResource()
		return name, name != "" && name != roceResource
	},
	"numRoceGdr": func(r *reading) (any, bool) {
		if name := r.roceResource(); name != "" {
			return r.request(name)
		}
		return nil, false
	},
	"environmentVariables": func(r *reading) (any, bool) {
		var vars []any
		for _, e := range r.userEnv() {
			e, _ := e.(map[string]any)
			v := map[string]any{"name": e["name"]}
			switch {
			case e["valueFrom"] == nil:
				v["value"] = str(e["value"])
			case dig(e, "valueFrom", "secretKeyRef") != nil:
				v["secret"] = pick(dig(e, "valueFrom", "secretKeyRef"), "name", "key")
			case dig(e, "valueFrom", "configMapKeyRef") != nil:
				v["configmap"] = pick(dig(e, "valueFrom", "configMapKeyRef"), "name", "key")
			default:
				continue // a fieldRef has no setting: the comparison lists it
			}
			vars = append(vars, v)
		}
		return vars, vars != nil
	},
	"envFrom": func(r *reading) (any, bool) { return r.main["envFrom"], r.main["envFrom"] != nil },
	"sshGitCloneConfig": func(r *reading) (any, bool) {
		key, hosts := r.volume(sshKeyVolume), r.volume(sshHostsVolume)
		if key == nil || hosts == nil {
			return nil, false
		}
		c := map[string]any{"secretName": dig(key, "secret", "secretName"), "configMapName": dig(hosts, "configMap", "name")}
		if p := r.mountPath(sshKeyVolume); p != sshKeyPath {
			c["secretMountPath"] = p
		}
		if p := r.mountPath(sshHostsVolume); p != sshHostsPath {
			c["configMapMountPath"] = p
		}
		cmd := r.env("GIT_SSH_COMMAND")
		if cmd != fmt.Sprintf("ssh -i %s/id_rsa -o UserKnownHostsFile=%s/known_hosts -vv", r.mountPath(sshKeyVolume), r.mountPath(sshHostsVolume)) {
			c["sshCmd"] = cmd
		}
		return c, true
	},
	"setupCommands": func(r *reading) (any, bool) {
		if r.j.kind == "DeepSpeedJob" {
			return nil, false
		}
		var cmds []any
		for _, c := range r.launch.setup {
			cmds = append(cmds, c)
		}
		return cmds, cmds != nil
	},
	"mainProgram": func(r *reading) (any, bool) {
		if r.j.kind == "DeepSpeedJob" {
			_, words := r.deepspeedRun()
			return present(joinWords(strs(words)))
		}
		if r.launch.note != "" {
			r.notes["mainProgram"] = r.launch.note
		}
		return present(r.launch.program)
	},
	"volumes": func(r *reading) (any, bool) {
		var volumes []any
		for _, v := range list(r.spec["volumes"]) {
			v, _ := v.(map[string]any)
			name := str(v["name"])
			claim := str(dig(v, "persistentVolumeClaim", "claimName"))
			mount := r.mount(name)
			if claim == "" || mount == nil {
				continue
			}
			entry := map[string]any{"name": name, "claimName": claim, "mountPath": mount["mountPath"]}
			maps.Copy(entry, pick(mount, "readOnly", "subPath").(map[string]any))
			volumes = append(volumes, entry)
		}
		return volumes, volumes != nil
	},
	"elastic":          (*reading).elastic,
	"torchrun":         (*reading).torchrun,
	"distributedDebug": func(r *reading) (any, bool) { return true, r.debug() },
	"topologyFileConfigMap": func(r *reading) (any, bool) {
		return present(str(dig(r.volume(topologyVolume), "configMap", "name")))
	},
	// The last configMapRef of envFrom, which envFrom carries as it is.
	"ncclGdrEnvConfigMap": func(*reading) (any, bool) { return nil, false },
	"multiNicNetworkName": func(r *reading) (any, bool) { return present(str(dig(r.meta, "annotations", networksNote))) },
	"disableSharedMemory": func(r *reading) (any, bool) {
		if r.shm() == nil {
			r.notes["disableSharedMemory"] = "the pod mounts no memory-backed volume at /dev/shm"
			return true, true
		}
		return nil, false
	},
	"sharedMemorySize": func(r *reading) (any, bool) {
		size := dig(r.shm(), "emptyDir", "sizeLimit")
		return size, size != nil
	},
	"mountNVMe": func(r *reading) (any, bool) {
		for _, v := range list(r.spec["volumes"]) {
			claim, ok := dig(v, "ephemeral", "volumeClaimTemplate", "spec").(map[string]any)
			name := str(dig(v, "name"))
			if !ok || r.mount(name) == nil {
				continue
			}
			nvme := map[string]any{"storage": dig(claim, "resources", "requests", "storage")}
			if class := str(claim["storageClassName"]); class != nvmeClass {
				nvme["storageClassName"] = claim["storageClassName"]
			}
			if p := str(r.mount(name)["mountPath"]); p != nvmePath {
				nvme["mountPath"] = p
			}
			return nvme, true
		}
		return nil, false
	},
	"initContainers": func(r *reading) (any, bool) {
		var init []any
		for _, c := range list(r.spec["initContainers"]) {
			c := maps.Clone(c.(map[string]any))
			if c["terminationMessagePolicy"] == "FallbackToLogsOnError" {
				delete(c, "terminationMessagePolicy")
			}
			init = append(init, c)
		}
		return init, init != nil
	},
	"autopilotHealthChecks": func(r *reading) (any, bool) {
		labels, _ := dig(r.meta, "labels").(map[string]any)
		if _, ok := labels["autopilot"]; !ok {
			return nil, false
		}
		var checks []any
		for _, k := range sortedKeys(labels) {
			if k != "autopilot" && labels[k] == "" && r.customLabels()[k] == nil {
				checks = append(checks, k)
			}
		}
		return checks, checks != nil
	},
	"hostIgnoreList": func(r *reading) (any, bool) {
		e := r.hostExpression()
		return dig(e, "values"), e != nil
	},
	"nodeSelector": func(r *reading) (any, bool) { return r.spec["nodeSelector"], r.spec["nodeSelector"] != nil },
	"tolerations":  func(r *reading) (any, bool) { return r.spec["tolerations"], r.spec["tolerations"] != nil },
	"topology": func(r *reading) (any, bool) {
		t := map[string]any{}
		for _, mode := range []string{"required", "preferred"} {
			if level := str(dig(r.meta, "annotations", topologyPrefix+mode+"-topology")); level != "" {
				t[mode] = level
			}
		}
		return t, len(t) > 0
	},
	"podAnnotations": func(r *reading) (any, bool) {
		a := map[string]any{}
		for k, v := range mapOf(dig(r.meta, "annotations")) {
			if !r.ownAnnotation(k) {
				a[k] = v
			}
		}
		return a, len(a) > 0
	},
	"podLabels": func(r *reading) (any, bool) {
		l := map[string]any{}
		_, autopilot := mapOf(dig(r.meta, "labels"))["autopilot"]
		for k, v := range mapOf(dig(r.meta, "labels")) {
			custom, isCustom := r.customLabels()[k]
			if (isCustom && custom == v) || (autopilot && v == "") {
				continue
			}
			l[k] = v
		}
		return l, len(l) > 0
	},
	"schedulerName": func(r *reading) (any, bool) { return present(str(r.spec["schedulerName"])) },
	// schedulerName: default-scheduler renders what bypassCoscheduler does.
	"bypassCoscheduler":                    func(*reading) (any, bool) { return nil, false },
	"serviceAccountName":                   func(r *reading) (any, bool) { return present(str(r.spec["serviceAccountName"])) },
	"admissionGracePeriodDuration":         appWrapperSetting("admissionGracePeriodDuration"),
	"warmupGracePeriodDuration":            appWrapperSetting("warmupGracePeriodDuration"),
	"failureGracePeriodDuration":           appWrapperSetting("failureGracePeriodDuration"),
	"retryPausePeriodDuration":             appWrapperSetting("retryPausePeriodDuration"),
	"retryLimit":                           appWrapperSetting("retryLimit"),
	"forcefulDeletionGracePeriodDuration":  appWrapperSetting("forcefulDeletionGracePeriodDuration"),
	"deletionOnFailureGracePeriodDuration": appWrapperSetting("deletionOnFailureGracePeriodDuration"),
	"successTTLDuration":                   appWrapperSetting("successTTLDuration"),
	"terminalExitCodes":                    appWrapperSetting("terminalExitCodes"),
	"retryableExitCodes":                   appWrapperSetting("retryableExitCodes"),
	"restartPolicy": func(r *reading) (any, bool) {
		var policy string
		switch r.j.kind {
		case "TrainJob":
			return nil, false
		case "JobSet":
			policy = str(r.spec["restartPolicy"])
		case "DeepSpeedJob":
			policy = str(dig(r.j.inner, "spec", "worker", "restartPolicy"))
		case "PyTorchJob":
			policy = str(dig(r.j.inner, "spec", "pytorchReplicaSpecs", r.j.pods[0].role, "restartPolicy"))
			if policy == "" {
				r.notes["restartPolicy"] = "the training operator's default for a replica that gives none"
				policy = "OnFailure"
			}
		case "PyTorchTrainingJob":
			policy = str(dig(r.j.inner, "spec", "replicaSpecs", "0", "restartPolicy"))
		}
		return policy, policy != ""
	},
	"terminationGracePeriodSeconds": func(r *reading) (any, bool) {
		return r.spec["terminationGracePeriodSeconds"], r.spec["terminationGracePeriodSeconds"] != nil
	},
	"deepspeed": func(r *reading) (any, bool) {
		if r.j.kind != "DeepSpeedJob" {
			return nil, false
		}
		config := mapOf(dig(r.j.inner, "spec", "config"))
		ds := map[string]any{}
		if launch, _ := r.deepspeedRun(); launch != "python" {
			ds["launch"] = launch
		}
		if slots, ok := config["slotsPerWorker"].(float64); ok && slots != float64(r.processesPerPod()) {
			ds["slotsPerWorker"] = slots
		}
		maps.Copy(ds, pick(config, "localRank", "autotune", "otherArgs", "customCommand").(map[string]any))
		maps.Copy(ds, pick(dig(r.j.inner, "spec"), "disableCustomEnv").(map[string]any))
		return ds, len(ds) > 0
	},
	"runMode":         func(r *reading) (any, bool) { return r.t9kField("runMode") },
	"runPolicy":       func(r *reading) (any, bool) { return r.t9kField("runPolicy") },
	"tensorboardSpec": func(r *reading) (any, bool) { return r.t9kField("tensorboardSpec") },
	"t9kScheduler": func(r *reading) (any, bool) {
		s := dig(r.t9k, "scheduler", "t9kScheduler")
		return s, s != nil
	},
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

// roceResource is the extended resource of RoCE GDR: the one the training
// container requests beyond CPUs, memory, GPUs and the node's own.
func (r *reading) roceResource() string {
	var found []string
	for name := range mapOf(dig(r.main, "resources", "limits")) {
		if strings.Contains(name, "/") && name != gpuResource && !strings.HasPrefix(name, "hugepages-") {
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

// elastic reads the elastic bounds: a PyTorchJob's elasticPolicy, a T9k job's
// spec.elastic, or the older torchrunConfig.minNodes and maxNodes.
func (r *reading) elastic() (any, bool) {
	switch r.j.kind {
	case "PyTorchJob":
		p, ok := dig(r.j.inner, "spec", "elasticPolicy").(map[string]any)
		if !ok {
			return nil, false
		}
		return map[string]any{"minPods": num(p["minReplicas"], 1), "maxPods": num(p["maxReplicas"], float64(r.j.numPods()))}, true
	case "PyTorchTrainingJob", "DeepSpeedJob":
		e, ok := dig(r.t9k, "elastic").(map[string]any)
		if ok && e["enabled"] == true {
			elastic := map[string]any{"minPods": num(e["minReplicas"], 1), "maxPods": num(e["maxReplicas"], float64(r.j.numPods()))}
			if w, ok := dig(r.j.inner, "spec", "replicaSpecs", "0", "scalingWeight").(float64); ok {
				elastic["scalingWeight"] = w
			}
			return elastic, true
		}
		if min, ok := dig(r.t9k, "torchrunConfig", "minNodes").(float64); ok {
			r.notes["elastic"] = "from torchrunConfig.minNodes (and maxNodes), T9k's older elastic bounds"
			return map[string]any{"minPods": min, "maxPods": num(dig(r.t9k, "torchrunConfig", "maxNodes"), float64(r.j.numPods()))}, true
		}
	}
	return nil, false
}

// torchrun reads torchrun's settings from the launch.
func (r *reading) torchrun() (any, bool) {
	t := maps.Clone(r.launch.torchrun)
	if t == nil {
		t = map[string]any{}
	}
	nproc := r.launch.nproc
	if n, ok := dig(r.j.inner, "spec", "nprocPerNode").(string); ok && nproc == "" && r.j.kind == "PyTorchJob" {
		nproc = n
	}
	if r.j.kind == "TrainJob" {
		nproc = str(dig(r.j.inner, "spec", "trainer", "numProcPerNode"))
		if f, ok := dig(r.j.inner, "spec", "trainer", "numProcPerNode").(float64); ok {
			nproc = fmt.Sprint(f)
		}
	}
	if n, err := strconv.Atoi(nproc); err == nil {
		gpus := r.gpus()
		// The chart writes --nproc_per_node only with GPUs or nprocPerNode,
		// except T9k's script and a TrainJob, which always give it.
		always := r.j.kind == "PyTorchTrainingJob" || r.j.kind == "TrainJob"
		if n != max(1, gpus) || (gpus == 0 && !always) {
			t["nprocPerNode"] = float64(n)
		}
	}
	if r.j.kind == "PyTorchJob" {
		if restarts, ok := dig(r.j.inner, "spec", "elasticPolicy", "maxRestarts").(float64); ok {
			t["maxRestarts"] = restarts
		}
	}
	if _, elastic := r.elastic(); elastic || (r.j.kind != "PyTorchJob" && r.j.kind != "JobSet") {
		delete(t, "rdzvBackend")
	}
	if r.j.kind == "DeepSpeedJob" {
		return nil, false
	}
	return t, len(t) > 0
}

// gpus is the GPUs of the training container.
func (r *reading) gpus() int {
	v, _ := r.request(gpuResource)
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

// appWrapperSetting reads a setting the AppWrapper holds as an annotation of
// the same name.
func appWrapperSetting(key string) func(*reading) (any, bool) {
	return func(r *reading) (any, bool) {
		if !r.j.wrapped {
			return nil, false
		}
		text, ok := dig(r.outer, "annotations", appWrapperPrefix+key).(string)
		if !ok {
			return nil, false
		}
		switch key {
		case "retryLimit":
			if n, err := strconv.Atoi(text); err == nil {
				return float64(n), true
			}
		case "terminalExitCodes", "retryableExitCodes":
			var codes []any
			for _, c := range strings.Split(text, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(c))
				if err != nil {
					return text, true // the schema refuses it, and says why
				}
				codes = append(codes, float64(n))
			}
			return codes, true
		}
		return text, true
	}
}

// latest tells whether Kubernetes pulls an image always by default: no tag,
// or the tag latest, and no digest.
func latest(image string) bool {
	if strings.Contains(image, "@") {
		return false
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, hasTag := strings.Cut(name, ":")
	return !hasTag || tag == "latest"
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func present(s string) (any, bool) { return s, s != "" }

func num(v any, otherwise float64) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return otherwise
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func strs(v any) []string {
	var out []string
	for _, item := range list(v) {
		out = append(out, fmt.Sprint(item))
	}
	return out
}

// pick is the fields of a map that it has.
func pick(v any, fields ...string) any {
	m := mapOf(v)
	out := map[string]any{}
	for _, f := range fields {
		if value, ok := m[f]; ok {
			out[f] = value
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	return keys
}
