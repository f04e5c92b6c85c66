// Package local runs a rendered job on this machine: its pods as the kind's
// controller would make them, each container a process with the environment
// the kubelet would give it. What a controller puts in its pods (names,
// labels, environment) is here, so that the simulated cluster's process
// nodes use the same knowledge where they stand in for a controller.
package local

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/torchwrap/generator/pkg/accelerator"
	"github.com/torchwrap/generator/pkg/cluster"
)

// Pod is one pod of a job as its kind's controller makes it: its place in
// the job, the pod (name, labels, annotations, host name and the spec
// with the controller's environment added), and the names other pods reach
// it by (its Service's or its host name, alone and in its namespace).
type Pod struct {
	Member cluster.Member
	Pod    *corev1.Pod
	Names  []string
}

// Label is the pod's label in the output, as generator logs prints it.
func (p Pod) Label() string { return p.Member.String() }

// Port defaults of the controllers.
const (
	// pyTorchJobPort is the training operator's port when the container
	// names none (pytorchjob-port).
	pyTorchJobPort = 23456
	// trainerPort is Trainer v2's PET_MASTER_PORT.
	trainerPort = 29500
	// t9kPort is the MASTER_PORT this run gives a T9k job's pods: T9k's
	// documents do not say the controller's.
	t9kPort = 23456
)

// Annotations and labels the controllers put on pods.
const (
	completionIndex = "batch.kubernetes.io/job-completion-index"
	jobSetName      = "jobset.sigs.k8s.io/jobset-name"
	replicatedJob   = "jobset.sigs.k8s.io/replicatedjob-name"
	jobIndex        = "jobset.sigs.k8s.io/job-index"
)

// Pods are the pods of job, in the order of their node ranks, as its
// kind's controller makes them: the training operator's for a PyTorchJob,
// JobSet's and the Job controller's for a JobSet, Trainer v2's on its
// torch-distributed runtime for a TrainJob, and, for a PyTorchTrainingJob,
// what T9k's documents say of its controller. A DeepSpeedJob is refused:
// its launcher reaches the workers over ssh.
func Pods(job *cluster.Job) ([]Pod, error) {
	inner := job.Inner.Object
	name, namespace := job.Inner.GetName(), job.Object.GetNamespace()
	switch kind := job.Inner.GetKind(); kind {
	case "PyTorchJob":
		return pyTorchJobPods(inner, name, namespace)
	case "JobSet":
		return jobSetPods(inner, name, namespace)
	case "TrainJob":
		return trainJobPods(inner, name, namespace)
	case "PyTorchTrainingJob":
		return t9kPods(inner, name, namespace)
	case "DeepSpeedJob":
		return nil, fmt.Errorf("a DeepSpeedJob does not run here: its launcher in worker 0 reaches the other workers over ssh with a hostfile T9k's controller writes; try the program as a PyTorchTrainingJob (jobKind: PyTorchTrainingJob)")
	default:
		return nil, fmt.Errorf("a %s does not run here: generator run --local runs PyTorchJob, JobSet, TrainJob and PyTorchTrainingJob", kind)
	}
}

// newPod is a pod of the job from its template.
func newPod(template map[string]any, name, namespace string) (*corev1.Pod, error) {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(template, &t); err != nil {
		return nil, fmt.Errorf("the pod template of %s: %w", name, err)
	}
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.Name, pod.Namespace = name, namespace
	pod.Labels = maps.Clone(pod.Labels)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	return pod, nil
}

// serviceNames are the names a Service (or a pod's host name in a
// subdomain) is found by: alone, and in its namespace.
func serviceNames(name, namespace string) []string {
	return []string{name, name + "." + namespace, name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local"}
}

// addEnv appends variables to every container of the pod; with init, to
// its init containers too.
func addEnv(pod *corev1.Pod, init bool, vars ...corev1.EnvVar) {
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, vars...)
	}
	for i := range pod.Spec.InitContainers {
		if init {
			pod.Spec.InitContainers[i].Env = append(pod.Spec.InitContainers[i].Env, vars...)
		}
	}
}

func value(name string, v any) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: fmt.Sprint(v)} }

func fieldRef(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// count is a count in an object, as cluster.Count reads it.
func count(m map[string]any, key string) int { return int(cluster.Count(m, key)) }

func mapAt(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	return m
}

// pyTorchJobPods are the training operator's pods (v1.9): Master 0, then
// Worker 0..n-1, each named and reached as <job>-<type>-<index> (its
// Service), with the variables of its setPodEnv after the container's own:
// PYTHONUNBUFFERED, the master's address and port (MASTER_ and PET_), the
// world size (pods × nprocPerNode), RANK and PET_NODE_RANK, PET_NPROC_PER_NODE
// (nprocPerNode, which the operator's defaults make auto), and PET_NNODES,
// or with an elasticPolicy the elastic ones (PET_RDZV_ENDPOINT,
// PET_RDZV_BACKEND, PET_NNODES as min:max,
// PET_MAX_RESTARTS, PET_NPROC_PER_NODE, PET_RDZV_ID, PET_RDZV_CONF,
// PET_STANDALONE).
func pyTorchJobPods(job map[string]any, name, namespace string) ([]Pod, error) {
	spec := mapAt(job, "spec")
	specs := mapAt(spec, "pytorchReplicaSpecs")
	if specs["Master"] == nil {
		return nil, fmt.Errorf("a PyTorchJob without a Master does not run here")
	}
	total := 0
	for _, s := range specs {
		total += count(s.(map[string]any), "replicas")
	}
	elastic := mapAt(spec, "elasticPolicy")
	// The operator's defaults (SetDefaults_PyTorchJob): nprocPerNode auto,
	// unless an elasticPolicy gives nProcPerNode.
	nprocText, hasNproc := spec["nprocPerNode"].(string)
	if _, elasticNproc := elastic["nProcPerNode"]; !hasNproc && !elasticNproc {
		nprocText, hasNproc = "auto", true
	}
	nproc := 1
	if n, err := strconv.Atoi(nprocText); err == nil {
		nproc = n
	}
	port := func(replicaType string) int {
		for _, c := range mapAt(specs, replicaType, "template", "spec")["containers"].([]any) {
			container := c.(map[string]any)
			if container["name"] != "pytorch" {
				continue
			}
			ports, _ := container["ports"].([]any)
			for _, p := range ports {
				if p := p.(map[string]any); p["name"] == "pytorchjob-port" {
					return count(p, "containerPort")
				}
			}
		}
		return pyTorchJobPort
	}
	master := name + "-master-0"
	var pods []Pod
	for _, replicaType := range []string{"Master", "Worker"} {
		rs, ok := specs[replicaType].(map[string]any)
		if !ok {
			continue
		}
		role := strings.ToLower(replicaType)
		for i := range count(rs, "replicas") {
			rank := i
			if replicaType == "Worker" {
				rank += count(specs["Master"].(map[string]any), "replicas")
			}
			podName := fmt.Sprintf("%s-%s-%d", name, role, i)
			pod, err := newPod(mapAt(rs, "template"), podName, namespace)
			if err != nil {
				return nil, err
			}
			pod.Labels["training.kubeflow.org/job-name"] = name
			pod.Labels["training.kubeflow.org/replica-type"] = role
			pod.Labels["training.kubeflow.org/replica-index"] = strconv.Itoa(i)
			pod.Labels["training.kubeflow.org/operator-name"] = "pytorchjob-controller"
			if replicaType == "Master" {
				pod.Labels["training.kubeflow.org/job-role"] = "master"
			}
			vars := []corev1.EnvVar{value("PYTHONUNBUFFERED", 1),
				value("MASTER_PORT", port("Master")), value("PET_MASTER_PORT", port("Master")),
				value("MASTER_ADDR", master), value("PET_MASTER_ADDR", master),
				value("WORLD_SIZE", total*nproc), value("RANK", rank), value("PET_NODE_RANK", rank)}
			if hasNproc {
				vars = append(vars, value("PET_NPROC_PER_NODE", nprocText))
			}
			if elastic != nil {
				vars = append(vars, elasticEnv(elastic, specs, name, port)...)
			} else {
				vars = append(vars, value("PET_NNODES", total))
			}
			addEnv(pod, false, vars...)
			pods = append(pods, Pod{Member: cluster.Member{Role: role, Index: i, Rank: rank}, Pod: pod, Names: serviceNames(podName, namespace)})
		}
	}
	return pods, nil
}

// elasticEnv are the training operator's variables of an elasticPolicy.
func elasticEnv(elastic, specs map[string]any, name string, port func(string) int) []corev1.EnvVar {
	host, _ := elastic["rdzvHost"].(string)
	if host == "" {
		host = name + "-worker-0"
	}
	rdzvPort := port("Worker")
	if _, ok := elastic["rdzvPort"]; ok {
		rdzvPort = count(elastic, "rdzvPort")
	}
	backend, _ := elastic["rdzvBackend"].(string)
	if backend == "" {
		backend = "c10d"
	}
	// The operator's defaults: either bound is the other, and with neither
	// both are the workers' replicas.
	_, hasMin := elastic["minReplicas"]
	_, hasMax := elastic["maxReplicas"]
	lower, upper := count(elastic, "minReplicas"), count(elastic, "maxReplicas")
	switch {
	case !hasMin && !hasMax:
		lower = count(mapAt(specs, "Worker"), "replicas")
		upper = lower
	case !hasMin:
		lower = upper
	case !hasMax:
		upper = lower
	}
	nnodes := fmt.Sprintf("%d:%d", lower, upper)
	vars := []corev1.EnvVar{value("PET_RDZV_ENDPOINT", fmt.Sprintf("%s:%d", host, rdzvPort)), value("PET_RDZV_BACKEND", backend), value("PET_NNODES", nnodes)}
	for _, field := range []struct{ key, variable string }{{"maxRestarts", "PET_MAX_RESTARTS"}, {"nProcPerNode", "PET_NPROC_PER_NODE"}} {
		if _, ok := elastic[field.key]; ok {
			vars = append(vars, value(field.variable, count(elastic, field.key)))
		}
	}
	if id, ok := elastic["rdzvId"].(string); ok {
		vars = append(vars, value("PET_RDZV_ID", id))
	}
	if conf, _ := elastic["rdzvConf"].([]any); len(conf) > 0 {
		var pairs []string
		for _, c := range conf {
			c := c.(map[string]any)
			pairs = append(pairs, fmt.Sprintf("%v=%v", c["key"], c["value"]))
		}
		vars = append(vars, value("PET_RDZV_CONF", strings.Join(pairs, ",")))
	}
	if standalone, _ := elastic["standalone"].(bool); standalone {
		vars = append(vars, value("PET_STANDALONE", ""))
	}
	return vars
}

// jobSetPods are a JobSet's pods: of each replicated job, each Job (job
// index), each completion index of the Job, host name
// <jobset>-<replicated job>-<job index>-<completion index> in the
// subdomain of the JobSet's name (or network.subdomain), with JobSet's
// labels and annotations and the Job controller's JOB_COMPLETION_INDEX.
func jobSetPods(jobSet map[string]any, name, namespace string) ([]Pod, error) {
	spec := mapAt(jobSet, "spec")
	subdomain, _ := mapAt(spec, "network")["subdomain"].(string)
	if subdomain == "" {
		subdomain = name
	}
	jobs, _ := spec["replicatedJobs"].([]any)
	var pods []Pod
	rank := 0
	for _, j := range jobs {
		rj := j.(map[string]any)
		jobSpec := mapAt(rj, "template", "spec")
		perJob := min(count(jobSpec, "parallelism"), count(jobSpec, "completions"))
		replicas := count(rj, "replicas")
		rjName, _ := rj["name"].(string)
		for ji := range replicas {
			for k := range perJob {
				host := fmt.Sprintf("%s-%s-%d-%d", name, rjName, ji, k)
				pod, err := newPod(mapAt(jobSpec, "template"), host, namespace)
				if err != nil {
					return nil, err
				}
				jobSetPod(pod, name, rjName, ji, k, subdomain)
				role := rjName
				if replicas > 1 {
					role = fmt.Sprintf("%s-%d", rjName, ji)
				}
				pods = append(pods, Pod{Member: cluster.Member{Role: role, Index: k, Rank: rank}, Pod: pod,
					Names: serviceNames(host+"."+subdomain, namespace)})
				rank++
			}
		}
	}
	return pods, nil
}

// jobSetPod gives a pod what JobSet and the Job controller give it: host
// name and subdomain, labels and annotations, JOB_COMPLETION_INDEX.
func jobSetPod(pod *corev1.Pod, jobSet, rj string, ji, k int, subdomain string) {
	pod.Spec.Hostname, pod.Spec.Subdomain = pod.Name, subdomain
	for key, v := range map[string]string{jobSetName: jobSet, replicatedJob: rj, jobIndex: strconv.Itoa(ji), completionIndex: strconv.Itoa(k)} {
		pod.Labels[key], pod.Annotations[key] = v, v
	}
	addEnv(pod, true, fieldRef("JOB_COMPLETION_INDEX", "metadata.annotations['"+completionIndex+"']"))
}

// trainJobPods are a TrainJob's pods on Trainer v2's torch-distributed
// runtime: numNodes pods of the replicated job node, whose container node
// runs the trainer's image, command, arguments, resources and variables,
// with the runtime patches' pod spec (volumes, mounts, scheduling), and
// the torch plugin's variables: PET_NNODES, PET_NPROC_PER_NODE (the
// trainer's numProcPerNode, else auto, or with no GPU the CPUs of a node),
// PET_NODE_RANK (the completion index), PET_MASTER_ADDR (pod 0 of node) and
// PET_MASTER_PORT.
func trainJobPods(trainJob map[string]any, name, namespace string) ([]Pod, error) {
	spec := mapAt(trainJob, "spec")
	trainer := mapAt(spec, "trainer")
	template := map[string]any{}
	patches, _ := spec["runtimePatches"].([]any)
	for _, p := range patches {
		jobs, _ := mapAt(p.(map[string]any), "trainingRuntimeSpec", "template", "spec")["replicatedJobs"].([]any)
		for _, j := range jobs {
			if rj := j.(map[string]any); rj["name"] == "node" {
				template = mapAt(rj, "template", "spec", "template")
			}
		}
	}
	var node corev1.Container
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(trainer, &node); err != nil {
		return nil, fmt.Errorf("spec.trainer: %w", err)
	}
	var resources corev1.ResourceRequirements
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mapAt(trainer, "resourcesPerNode"), &resources); err != nil {
		return nil, fmt.Errorf("spec.trainer.resourcesPerNode: %w", err)
	}
	nproc := "auto"
	if _, ok := trainer["numProcPerNode"]; ok {
		nproc = fmt.Sprint(count(trainer, "numProcPerNode"))
	} else if _, devices := accelerator.In(resources.Limits); devices.IsZero() {
		cpus := resources.Limits.Cpu()
		if cpus.IsZero() {
			cpus = resources.Requests.Cpu()
		}
		nproc = fmt.Sprint(max(1, cpus.Value()))
	}
	nodes := count(trainer, "numNodes")
	var pods []Pod
	for k := range nodes {
		host := fmt.Sprintf("%s-node-0-%d", name, k)
		pod, err := newPod(template, host, namespace)
		if err != nil {
			return nil, err
		}
		container := corev1.Container{Name: "node"}
		at := -1
		for i, c := range pod.Spec.Containers {
			if c.Name == "node" {
				container, at = c, i
			}
		}
		container.Image, container.Command, container.Args, container.Resources = node.Image, node.Command, node.Args, resources
		container.Env = append(append(container.Env, node.Env...), value("PET_NNODES", nodes), value("PET_NPROC_PER_NODE", nproc),
			fieldRef("PET_NODE_RANK", "metadata.annotations['"+completionIndex+"']"),
			value("PET_MASTER_ADDR", fmt.Sprintf("%s-node-0-0.%s", name, name)), value("PET_MASTER_PORT", trainerPort))
		if at < 0 {
			pod.Spec.Containers = append([]corev1.Container{container}, pod.Spec.Containers...)
		} else {
			pod.Spec.Containers[at] = container
		}
		pod.Labels["trainer.kubeflow.org/trainjob-name"] = name
		jobSetPod(pod, name, "node", 0, k, name)
		pods = append(pods, Pod{Member: cluster.Member{Role: "node", Index: k, Rank: k}, Pod: pod, Names: serviceNames(host+"."+name, namespace)})
	}
	return pods, nil
}

// t9kPods are a PyTorchTrainingJob's pods, as T9k's documents describe
// them: of each replica type in order, replicas pods <job>-<type>-<index>;
// the first pod is the master, whose name and port every pod finds in
// MASTER_ADDR and MASTER_PORT, with RANK (its place in the job) and
// WORLD_SIZE (the pods), as real T9k scripts read them. In torchrun mode
// (torchrunConfig.enabled) the controller runs torchrun, with the
// rendezvous at the master, before the training container's arguments; the
// line here is this tool's reading of the documents.
func t9kPods(job map[string]any, name, namespace string) ([]Pod, error) {
	spec := mapAt(job, "spec")
	specs, _ := spec["replicaSpecs"].([]any)
	total := 0
	for _, s := range specs {
		total += count(s.(map[string]any), "replicas")
	}
	var pods []Pod
	var master string
	for _, s := range specs {
		rs := s.(map[string]any)
		role, _ := rs["type"].(string)
		for i := range count(rs, "replicas") {
			podName := fmt.Sprintf("%s-%s-%d", name, role, i)
			if master == "" {
				master = podName
			}
			pod, err := newPod(mapAt(rs, "template"), podName, namespace)
			if err != nil {
				return nil, err
			}
			rank := len(pods)
			addEnv(pod, false, value("MASTER_ADDR", master), value("MASTER_PORT", t9kPort), value("RANK", rank), value("WORLD_SIZE", total))
			if torchrun := mapAt(spec, "torchrunConfig"); torchrun["enabled"] == true && len(pod.Spec.Containers) > 0 {
				c := &pod.Spec.Containers[0]
				c.Command, c.Args = []string{"torchrun"}, append(t9kTorchrun(torchrun, mapAt(spec, "elastic"), total), c.Args...)
			}
			pods = append(pods, Pod{Member: cluster.Member{Role: role, Index: i, Rank: rank}, Pod: pod, Names: serviceNames(podName, namespace)})
		}
	}
	return pods, nil
}

// t9kTorchrun are the options of torchrun in T9k's torchrun mode: the
// pods (min:max when elastic), the processes per pod, the rendezvous at
// the master, the restarts and the extra options.
func t9kTorchrun(torchrun, elastic map[string]any, pods int) []string {
	nnodes := fmt.Sprint(pods)
	if elastic["enabled"] == true {
		nnodes = fmt.Sprintf("%d:%d", count(elastic, "minReplicas"), count(elastic, "maxReplicas"))
	}
	backend, _ := torchrun["rdzvBackend"].(string)
	if backend == "" {
		backend = "c10d"
	}
	options := []string{"--nnodes=" + nnodes, "--rdzv_backend=" + backend, "--rdzv_endpoint=$(MASTER_ADDR):$(MASTER_PORT)"}
	if n, ok := torchrun["procPerNode"].(string); ok {
		options = append(options, "--nproc_per_node="+n)
	}
	if _, ok := torchrun["maxRestarts"]; ok {
		options = append(options, fmt.Sprintf("--max_restarts=%d", count(torchrun, "maxRestarts")))
	}
	extra, _ := torchrun["extraOptions"].([]any)
	for _, o := range extra {
		options = append(options, fmt.Sprint(o))
	}
	return options
}
