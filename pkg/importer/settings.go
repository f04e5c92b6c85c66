package importer

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/torchwrap/generator/pkg/accelerator"
	"github.com/torchwrap/generator/pkg/cluster"
)

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
	// A Helm hook of any kind: the compare lists where helmHook's differs.
	"helmHook": func(r *reading) (any, bool) {
		hook := str(dig(r.outer, "annotations", "helm.sh/hook")) != ""
		return hook, hook
	},
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
	"numCpusPerPod": func(r *reading) (any, bool) { return r.request("cpu") },
	"numGpusPerPod": func(r *reading) (any, bool) { return r.request(r.accelerator()) },
	"gpuResName": func(r *reading) (any, bool) {
		name := r.accelerator()
		return name, name != "" && name != accelerator.Default
	},
	"totalMemoryPerPod": func(r *reading) (any, bool) { return r.request("memory") },
	"limitCpusPerPod":   func(r *reading) (any, bool) { return r.limit("cpu") },
	"limitGpusPerPod":   func(r *reading) (any, bool) { return r.limit(r.accelerator()) },
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
	"setupErrexit": func(r *reading) (any, bool) { return r.launch.errexit, r.launch.errexit },
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
			if sc, ok := c["securityContext"]; ok && r.ownInitSecurity(sc) {
				delete(c, "securityContext")
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
	"podSecurity":                          readPodSecurity,
	"securityContext":                      readSecurityContext,
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
