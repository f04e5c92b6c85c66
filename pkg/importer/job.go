package importer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/diag"
)

// groups are the kinds of job the generator makes (jobKind), each with its
// API group; an AppWrapper is read around one of them.
var groups = map[string]string{
	"PyTorchJob":         "kubeflow.org",
	"JobSet":             "jobset.x-k8s.io",
	"TrainJob":           "trainer.kubeflow.org",
	"PyTorchTrainingJob": "batch.tensorstack.dev",
	"DeepSpeedJob":       "batch.tensorstack.dev",
}

// appWrapperGroups are the API groups AppWrapper has had: today's, and
// MCAD's before it (v1beta1, whose job is in spec.resources.GenericItems).
var appWrapperGroups = map[string]bool{"workload.codeflare.dev": true, "mcad.codeflare.dev": true, "mcad.ibm.com": true}

// kindNames lists the kinds import reads, for messages.
const kindNames = "PyTorchJob, JobSet, TrainJob, PyTorchTrainingJob, DeepSpeedJob, or an AppWrapper of one"

// job is an object read as a job of one of the generator's kinds.
type job struct {
	obj     *Object
	kind    string         // its jobKind
	wrapped bool           // in an AppWrapper
	inner   map[string]any // the job: the AppWrapper's component, or the object
	innerAt diag.Path      // where inner is in the object
	pods    []pod          // its pod templates, in the order the kind lists them
}

// pod is one pod template of a job, and how many pods it makes.
type pod struct {
	role     string
	replicas int64
	at       diag.Path // the PodTemplateSpec, in the object
	template map[string]any
}

// Skipped is an object that is not a job, left out of the import.
type Skipped struct {
	Where string // file:line
	What  string
}

// jobOf reads the object as a job. It returns nil for an object that makes no
// pods (a ConfigMap, a Service): nothing to import, and said so. A workload of
// a kind the generator does not make is an error.
func jobOf(obj *Object) (*job, error) {
	kind, group := obj.Kind()
	refuse := func(path diag.Path, msg string, args ...any) error {
		return &Error{Source: obj.Source, Line: obj.LineOf(path), Msg: fmt.Sprintf(msg, args...)}
	}
	if kind == "AppWrapper" && appWrapperGroups[group] {
		return appWrapper(obj, refuse)
	}
	if want, ok := groups[kind]; ok {
		if group != want {
			return nil, refuse(diag.Path{"apiVersion"}, "a %s of %s is not the %s the generator makes (%s): check apiVersion", kind, obj.Value["apiVersion"], kind, want)
		}
		return newJob(obj, kind, obj.Value, nil)
	}
	if makesPods(obj.Value) && kind != "TrainingRuntime" && kind != "ClusterTrainingRuntime" {
		return nil, refuse(diag.Path{"kind"}, "a %s (%s) is not a job the generator makes: import reads a %s", kind, obj.Value["apiVersion"], kindNames)
	}
	return nil, nil
}

// makesPods tells whether an object holds pods: a pod spec or a pod template,
// or replica specs of them, at its spec's top level.
func makesPods(obj map[string]any) bool {
	spec, _ := obj["spec"].(map[string]any)
	for key := range spec {
		if key == "containers" || key == "template" || key == "jobTemplate" || strings.HasSuffix(strings.ToLower(key), "replicaspecs") {
			return true
		}
	}
	return false
}

// appWrapper reads the job an AppWrapper wraps: its one component of a kind
// the generator makes, in v1beta2's spec.components[].template or MCAD's older
// v1beta1 spec.resources.GenericItems[].generictemplate.
func appWrapper(obj *Object, refuse func(diag.Path, string, ...any) error) (*job, error) {
	list, templateKey := diag.Path{"spec", "components"}, "template"
	if _, ok := dig(obj.Value, "spec", "resources", "GenericItems").([]any); ok {
		list, templateKey = diag.Path{"spec", "resources", "GenericItems"}, "generictemplate"
	}
	items, _ := dig(obj.Value, list...).([]any)
	var found *job
	for i, item := range items {
		at := append(slices.Clone(list), fmt.Sprint(i), templateKey)
		template, _ := dig(item, templateKey).(map[string]any)
		kind, _ := template["kind"].(string)
		apiVersion, _ := template["apiVersion"].(string)
		group, _, _ := strings.Cut(apiVersion, "/")
		switch {
		case groups[kind] != "" && groups[kind] == group && found != nil:
			return nil, refuse(at, "an AppWrapper of more than one job (a %s and a %s): settings describe one job; split it into AppWrappers of one job each", found.kind, kind)
		case groups[kind] != "" && groups[kind] == group:
			j, err := newJob(obj, kind, template, at)
			if err != nil {
				return nil, err
			}
			found = j
		case makesPods(template):
			return nil, refuse(at, "the AppWrapper wraps a %s (%s), which is not a job the generator makes: import reads a %s", kind, apiVersion, kindNames)
		}
	}
	if found == nil {
		return nil, refuse(list, "an AppWrapper with no job in it: import reads an AppWrapper of a PyTorchJob, JobSet, PyTorchTrainingJob or DeepSpeedJob")
	}
	return found, nil
}

// newJob reads the pod templates of a job of kind, at innerAt in obj (nil:
// the object itself).
func newJob(obj *Object, kind string, inner map[string]any, innerAt diag.Path) (*job, error) {
	j := &job{obj: obj, kind: kind, wrapped: innerAt != nil, inner: inner, innerAt: innerAt}
	add := func(role string, replicas int64, holder map[string]any, path ...string) {
		template, _ := holder["template"].(map[string]any)
		j.pods = append(j.pods, pod{role: role, replicas: replicas, at: j.path(append(path, "template")...), template: template})
	}
	spec, _ := inner["spec"].(map[string]any)
	refuse := func(path diag.Path, msg string, args ...any) error {
		return &Error{Source: obj.Source, Line: obj.LineOf(j.path(path...)), Msg: fmt.Sprintf(msg, args...)}
	}
	switch kind {
	case "PyTorchJob":
		specs, _ := spec["pytorchReplicaSpecs"].(map[string]any)
		for name := range specs {
			if name != "Master" && name != "Worker" {
				return nil, refuse(diag.Path{"spec", "pytorchReplicaSpecs", name}, "a PyTorchJob replica type %s: the generator makes Master and Worker only", name)
			}
		}
		for _, name := range []string{"Master", "Worker"} {
			if s, ok := specs[name].(map[string]any); ok {
				add(name, cluster.Count(s, "replicas"), s, "spec", "pytorchReplicaSpecs", name)
			}
		}
	case "JobSet":
		jobs, _ := spec["replicatedJobs"].([]any)
		if len(jobs) != 1 {
			return nil, refuse(diag.Path{"spec", "replicatedJobs"}, "a JobSet of %d replicated jobs: settings make one replicated job of identical pods (node); a JobSet of different roles cannot be imported", len(jobs))
		}
		rj, _ := jobs[0].(map[string]any)
		jobSpec, _ := dig(rj, "template", "spec").(map[string]any)
		add("node", cluster.Count(rj, "replicas")*cluster.Count(jobSpec, "parallelism"), jobSpec, "spec", "replicatedJobs", "0", "template", "spec")
	case "TrainJob":
		// Its pods are the training runtime's: read through trainer and the
		// runtime patches (trainJobPod).
	case "PyTorchTrainingJob":
		specs, _ := spec["replicaSpecs"].([]any)
		for i, s := range specs {
			s, _ := s.(map[string]any)
			role, _ := s["type"].(string)
			if role != "master" && role != "worker" && role != "node" {
				return nil, refuse(diag.Path{"spec", "replicaSpecs", fmt.Sprint(i), "type"}, "a PyTorchTrainingJob replica type %q: the generator makes a master and workers (T9k's node replicas are read as them); a job of other roles, such as parameter servers, cannot be imported", role)
			}
			add(role, cluster.Count(s, "replicas"), s, "spec", "replicaSpecs", fmt.Sprint(i))
		}
	case "DeepSpeedJob":
		w, _ := spec["worker"].(map[string]any)
		add("worker", cluster.Count(w, "replicas"), w, "spec", "worker")
	}
	if kind != "TrainJob" && (len(j.pods) == 0 || j.pods[0].template == nil) {
		return nil, refuse(diag.Path{"spec"}, "a %s with no pod template: there is nothing to import", kind)
	}
	return j, nil
}

// path is a path of the job's own, as a path in the object read.
func (j *job) path(p ...string) diag.Path {
	return append(slices.Clone(j.innerAt), p...)
}

// numPods is how many pods the job runs.
func (j *job) numPods() int64 {
	if j.kind == "TrainJob" {
		return cluster.Count(mapOf(dig(j.inner, "spec", "trainer")), "numNodes")
	}
	var n int64
	for _, p := range j.pods {
		n += p.replicas
	}
	return n
}

// dig is the value at the keys (or list indices) below v; nil when absent.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		switch node := v.(type) {
		case map[string]any:
			v = node[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(node) {
				return nil
			}
			v = node[i]
		default:
			return nil
		}
	}
	return v
}
