package importer

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/torchwrap/generator/pkg/diag"
)

// Difference is a field where what the settings render differs from the job
// read: lost (in the input, not rendered, or rendered otherwise) or added
// (rendered, not in the input).
type Difference struct {
	Path   diag.Path // in the input for a loss, in the rendered object for an addition
	Where  string    // file:line of a loss
	In     any       // the input's value; nil when added
	Out    any       // the rendered value; nil when lost
	Reason string    // why, and for a loss what to do
}

// controllerDefaults are the fields a kind's controllers (or Kueue) write
// into every job of the kind, with the value they write (nil: any), which a
// job read from a cluster has and the settings leave to them.
var controllerDefaults = []struct {
	path  diag.Path
	value any
	why   string
}{
	{diag.Path{"runPolicy", "cleanPodPolicy"}, "None", "the training operator's default"},
	{diag.Path{"runPolicy", "suspend"}, nil, "Kueue suspends a job it queues, and resumes it when it admits it"},
	{diag.Path{"spec", "suspend"}, nil, "Kueue suspends a job it queues, and resumes it when it admits it"},
	{diag.Path{"components", "*", "podSetInfos"}, nil, "Kueue writes it when it admits the AppWrapper"},
	{diag.Path{"containers", "0", "ports"}, []any{map[string]any{"containerPort": 23456.0, "name": "pytorchjob-port", "protocol": "TCP"}}, "the training operator gives the pytorch container this port"},
	{diag.Path{"containers", "0", "ports"}, []any{map[string]any{"containerPort": 23456.0, "name": "pytorchjob-port"}}, "the training operator gives the pytorch container this port"},
}

// defaulted gives a field lost the reason a controller sets it by itself;
// false when none does.
func defaulted(d *Difference) bool {
	for _, c := range controllerDefaults {
		if d.Out == nil && endsWith(d.Path, c.path) && (c.value == nil || fmt.Sprint(c.value) == fmt.Sprint(d.In)) {
			d.Reason = c.why
			return true
		}
	}
	return false
}

// serverFields are what the API server and controllers write into an object
// (kubectl get -o yaml has them), which no one writes and import ignores.
var serverFields = []diag.Path{
	{"status"},
	{"metadata", "uid"}, {"metadata", "resourceVersion"}, {"metadata", "generation"},
	{"metadata", "creationTimestamp"}, {"metadata", "managedFields"}, {"metadata", "selfLink"},
	{"metadata", "finalizers"}, {"metadata", "ownerReferences"}, {"metadata", "deletionTimestamp"}, {"metadata", "deletionGracePeriodSeconds"},
	{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"},
}

// comparable is an object as compared: without what the server writes, and
// without nulls, empty maps and empty lists, which mean what absence means.
func comparable(obj map[string]any) map[string]any {
	c := deepCopy(obj).(map[string]any)
	for _, p := range serverFields {
		if parent, ok := dig(c, p[:len(p)-1]...).(map[string]any); ok {
			delete(parent, p[len(p)-1])
		}
	}
	return prune(c).(map[string]any)
}

func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if item = prune(item); item == nil {
				delete(v, k)
			} else {
				v[k] = item
			}
		}
		if len(v) == 0 {
			return nil
		}
	case []any:
		if len(v) == 0 {
			return nil
		}
		for i, item := range v {
			v[i] = prune(item)
		}
	}
	return v
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, item := range v {
			m[k] = deepCopy(item)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, item := range v {
			l[i] = deepCopy(item)
		}
		return l
	}
	return v
}

// differences compares the job read (in) with what its settings render
// (out), piece by piece when an AppWrapper is read around the job: its
// metadata, its own fields, and the job, each at its path in each object.
func differences(j *job, in, out map[string]any) []Difference {
	var d []Difference
	if !j.wrapped {
		compare(in, out, nil, nil, &d)
		return d
	}
	outAt := diag.Path{"spec", "components", "0", "template"}
	compare(dig(in, j.innerAt...), dig(out, outAt...), j.innerAt, outAt, &d)
	inRest, outRest := without(in, j.innerAt), without(out, outAt)
	compare(inRest, outRest, nil, nil, &d)
	return d
}

// without is obj without the field at path (and what is left empty above it).
func without(obj map[string]any, path diag.Path) map[string]any {
	c := deepCopy(obj).(map[string]any)
	if parent, ok := dig(c, path[:len(path)-1]...).(map[string]any); ok {
		delete(parent, path[len(path)-1])
	}
	return mapOf(prune(c))
}

// compare adds the differences between in and out, at inPath and outPath.
func compare(in, out any, inPath, outPath diag.Path, d *[]Difference) {
	at := func(p diag.Path, k string) diag.Path { return append(slices.Clip(p), k) }
	switch {
	case in == nil && out == nil:
	case in == nil:
		// What a map adds is told field by field.
		if m, ok := out.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				compare(nil, m[k], at(inPath, k), at(outPath, k), d)
			}
			return
		}
		*d = append(*d, Difference{Path: outPath, Out: out})
	case out == nil:
		// What a map loses is told field by field too.
		if m, ok := in.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				compare(m[k], nil, at(inPath, k), at(outPath, k), d)
			}
			return
		}
		*d = append(*d, Difference{Path: inPath, In: in})
	default:
		inMap, inIsMap := in.(map[string]any)
		outMap, outIsMap := out.(map[string]any)
		inList, inIsList := in.([]any)
		outList, outIsList := out.([]any)
		switch {
		case inIsMap && outIsMap:
			for _, k := range sortedKeys(inMap) {
				compare(inMap[k], outMap[k], at(inPath, k), at(outPath, k), d)
			}
			for _, k := range sortedKeys(outMap) {
				if _, ok := inMap[k]; !ok {
					compare(nil, outMap[k], at(inPath, k), at(outPath, k), d)
				}
			}
		case inIsList && outIsList && scalars(inList) && scalars(outList):
			// A list of words or values (a command, a list of names) is
			// one value.
			if !slices.EqualFunc(inList, outList, sameScalar) {
				*d = append(*d, Difference{Path: inPath, In: in, Out: out})
			}
		case inIsList && outIsList:
			key := listKey(inList, outList)
			if key == "" {
				for i := range max(len(inList), len(outList)) {
					compare(item(inList, i), item(outList, i), at(inPath, fmt.Sprint(i)), at(outPath, fmt.Sprint(i)), d)
				}
				return
			}
			// Items of the same name are compared; those left over on
			// each side are paired in order (a container renamed), and
			// what is left then is lost or added.
			var inLeft, outLeft []int
			for i, x := range inList {
				j := slices.IndexFunc(outList, func(y any) bool { return dig(y, key) == dig(x, key) })
				if j < 0 {
					inLeft = append(inLeft, i)
					continue
				}
				compare(x, outList[j], at(inPath, fmt.Sprint(i)), at(outPath, fmt.Sprint(j)), d)
			}
			for j, y := range outList {
				if !slices.ContainsFunc(inList, func(x any) bool { return dig(x, key) == dig(y, key) }) {
					outLeft = append(outLeft, j)
				}
			}
			for n := range max(len(inLeft), len(outLeft)) {
				var x, y any
				xPath, yPath := inPath, outPath
				if n < len(inLeft) {
					x, xPath = inList[inLeft[n]], at(inPath, fmt.Sprint(inLeft[n]))
				}
				if n < len(outLeft) {
					y, yPath = outList[outLeft[n]], at(outPath, fmt.Sprint(outLeft[n]))
				}
				if y == nil {
					// An item lost is lost whole: a container, a volume.
					*d = append(*d, Difference{Path: xPath, In: x})
					continue
				}
				compare(x, y, xPath, yPath, d)
			}
		case !inIsMap && !outIsMap && !inIsList && !outIsList && sameScalar(in, out):
		default:
			*d = append(*d, Difference{Path: inPath, In: in, Out: out})
		}
	}
}

// scalars tells whether a list holds no maps or lists.
func scalars(l []any) bool {
	return !slices.ContainsFunc(l, func(x any) bool {
		switch x.(type) {
		case map[string]any, []any:
			return true
		}
		return false
	})
}

func item(l []any, i int) any {
	if i < 0 || i >= len(l) {
		return nil
	}
	return l[i]
}

// listKey is the field that names the items of both lists (name, or a T9k
// replica's type), so that they are matched by it rather than by place; ""
// when the items are not all named.
func listKey(a, b []any) string {
	for _, key := range []string{"name", "type"} {
		named := func(x any) bool { _, ok := dig(x, key).(string); return ok }
		if len(a) > 0 && len(b) > 0 && !slices.ContainsFunc(a, func(x any) bool { return !named(x) }) && !slices.ContainsFunc(b, func(x any) bool { return !named(x) }) {
			return key
		}
	}
	return ""
}

// sameScalar tells whether two values of a field mean the same: equal as
// written, or the same Kubernetes quantity ("8" and 8, "1Gi" and "1024Mi").
func sameScalar(a, b any) bool {
	if fmt.Sprint(a) == fmt.Sprint(b) {
		return true
	}
	qa, errA := resource.ParseQuantity(fmt.Sprint(a))
	qb, errB := resource.ParseQuantity(fmt.Sprint(b))
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}

// explain gives each difference its reason, from the first rule whose path
// ends as the difference's does.
func explain(d []Difference, launchNote string) []Difference {
	for i := range d {
		lost := d[i].In != nil
		for _, r := range reasons {
			if r.lost == lost && matches(d[i].Path, r.path) {
				d[i].Reason = r.why
				break
			}
		}
		if d[i].Reason == "" && lost {
			d[i].Reason = "no setting renders it; if the job needs it, patch the rendered job (a kustomize patch over generator render)"
		}
		if lost && (endsWith(d[i].Path, diag.Path{"containers", "0", "command"}) || endsWith(d[i].Path, diag.Path{"containers", "0", "args"}) || endsWith(d[i].Path, diag.Path{"trainer", "command"})) {
			d[i].Reason += ": " + launchNote
		}
	}
	return d
}

// matches tells whether the path ends with the pattern, where * is any one
// segment; a pattern that ends with ** matches the paths it holds anywhere,
// and everything below them.
func matches(path, pattern diag.Path) bool {
	if len(pattern) > 0 && pattern[len(pattern)-1] == "**" {
		for end := len(path); end > 0; end-- {
			if endsWith(path[:end], pattern[:len(pattern)-1]) {
				return true
			}
		}
		return false
	}
	return endsWith(path, pattern)
}

// endsWith tells whether the path ends with the pattern, where * is any one
// segment.
func endsWith(path, pattern diag.Path) bool {
	if len(pattern) > len(path) {
		return false
	}
	tail := path[len(path)-len(pattern):]
	for i, seg := range pattern {
		if seg != "*" && seg != tail[i] {
			return false
		}
	}
	return true
}

// reasons say why a field is added or lost, by how its path ends. The first
// that matches wins.
var reasons = []struct {
	lost bool
	path diag.Path
	why  string
}{
	{false, diag.Path{"metadata", "annotations", "torchwrap.dev/generator-version"}, "the generator's version, on every object it renders"},
	{false, diag.Path{"terminationMessagePolicy"}, "FallbackToLogsOnError: a failed container's last lines stay in its status, where generator status reads why it failed"},
	{false, diag.Path{"affinity", "**"}, "the node affinity that keeps the pods off nodes autopilot marks unhealthy"},
	{false, diag.Path{"nodeSelectorTerms", "0", "matchExpressions", "0"}, "the node affinity that keeps the pods off nodes autopilot marks unhealthy"},
	{false, diag.Path{"resources", "limits"}, "limits equal to the requests: the generator sets both"},
	{false, diag.Path{"resources", "limits", "*"}, "a limit equal to the request: the generator sets both"},
	{false, diag.Path{"resources", "requests", "*"}, "a request the generator always writes: the limit's, as Kubernetes defaults it, or the settings' default (numCpusPerPod 1, totalMemoryPerPod 1Gi)"},
	{false, diag.Path{"resources"}, "the settings' default requests and limits (numCpusPerPod 1, totalMemoryPerPod 1Gi): the generator always sets them"},
	{false, diag.Path{"imagePullPolicy"}, "Kubernetes' own default for an image with a tag, written out"},
	{false, diag.Path{"restartPolicy"}, "the settings' restartPolicy, Never unless set, so that a failure reaches the AppWrapper's retries"},
	{false, diag.Path{"network", "enableDNSHostnames"}, "every pod of the generator's JobSet has a stable name, the master's address"},
	{false, diag.Path{"network"}, "every pod of the generator's JobSet has a stable name, the master's address"},
	{false, diag.Path{"backoffLimit"}, "the generator's JobSet fails on the first failed pod, and the AppWrapper retries it whole"},
	{false, diag.Path{"completionMode"}, "the generator's JobSet runs an Indexed Job: each pod's index is its rank"},
	{false, diag.Path{"completions"}, "the generator's JobSet runs numPods pods at once"},
	{false, diag.Path{"parallelism"}, "the generator's JobSet runs numPods pods at once"},
	{false, diag.Path{"replicatedJobs", "*", "replicas"}, "the generator's JobSet is one replicated job of numPods pods"},
	{false, diag.Path{"env", "*", "**"}, "a variable the generator's launch sets (a JobSet's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)"},
	{false, diag.Path{"env"}, "the variables the generator's launch sets (a JobSet's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)"},
	{false, diag.Path{"pytorchReplicaSpecs", "Master", "**"}, "the generator makes a Master and numPods-1 Workers"},
	{false, diag.Path{"podSets"}, "AppWrapper cannot infer a T9k job's pods: the generator declares them"},
	{false, diag.Path{"labels", "*"}, "customLabels go on the AppWrapper, the job and every pod"},
	{false, diag.Path{"labels"}, "customLabels go on the AppWrapper, the job and every pod"},
	{false, diag.Path{"runtimeRef", "apiGroup"}, "the API server's default, written out"},
	{false, diag.Path{"runtimeRef", "kind"}, "the API server's default, written out"},
	{false, diag.Path{"numProcPerNode"}, "the processes of each node, written out: one per GPU, one without"},
	{false, diag.Path{"command"}, "the generator's launch script"},
	{false, diag.Path{"volumes"}, "the memory-backed /dev/shm volume (dshm)"},
	{false, diag.Path{"volumeMounts"}, "the memory-backed /dev/shm volume (dshm)"},
	{false, diag.Path{"apiVersion"}, "the AppWrapper's current API version"},
	{false, diag.Path{"components"}, "the job, in the AppWrapper's current form (v1beta2)"},

	{true, diag.Path{"containers", "0", "name"}, "the training container takes the name the kind's controller and the generator's tools look for: pytorch (worker in a DeepSpeedJob, node in a TrainJob)"},
	{true, diag.Path{"containers", "0", "command"}, "the launch is the generator's script"},
	{true, diag.Path{"containers", "0", "args"}, "the launch is the generator's script"},
	{true, diag.Path{"trainer", "command"}, "the launch is the generator's script"},
	{true, diag.Path{"enable"}, "T9k's older spelling: the generator writes enabled"},
	{true, diag.Path{"torchrunConfig", "minNodes"}, "T9k's older elastic bound: carried as elastic.minPods"},
	{true, diag.Path{"torchrunConfig", "maxNodes"}, "T9k's older elastic bound: carried as elastic.maxPods"},
	{true, diag.Path{"template", "metadata", "name"}, "the generator names the job as its AppWrapper: jobName"},
	{true, diag.Path{"spec", "nprocPerNode"}, "carried as torchrun.nprocPerNode, which the generator's script passes to torchrun (the operator would multiply WORLD_SIZE by it)"},
	{true, diag.Path{"workingDir"}, "no setting; where the generator's launch is a shell script, import makes `cd DIR` its first setup command"},
	{true, diag.Path{"volumes", "*", "name"}, "the generator names the volumes it adds itself (dshm for /dev/shm)"},
	{true, diag.Path{"volumeMounts", "*", "name"}, "the generator names the volumes it adds itself (dshm for /dev/shm)"},
	{true, diag.Path{"ports"}, "no setting: a container listens on its ports without declaring them, and torchrun's need none"},
	{true, diag.Path{"replicatedJobs", "*", "name"}, "the generator's replicated job is named node: its pods' names, and so MASTER_ADDR, are made of it"},
	{true, diag.Path{"env", "*", "value"}, "a variable the generator's launch sets itself, for the way its pods meet"},
	{true, diag.Path{"env", "*"}, "no setting takes a variable from a field of the pod; read it in the program, or patch the rendered job"},
	{true, diag.Path{"volumes", "*"}, "no setting makes this volume: the generator mounts PersistentVolumeClaims (volumes), NVMe scratch (mountNVMe), /dev/shm and the ssh and topology files; use a PersistentVolumeClaim, or patch the rendered job"},
	{true, diag.Path{"volumeMounts", "*"}, "no setting makes this mount: volumes mounts PersistentVolumeClaims into the training container"},
	{true, diag.Path{"containers", "*"}, "the generator's pods run one training container; run the others' work in initContainers, or patch the rendered job"},
	{true, diag.Path{"securityContext", "**"}, "no setting: the generator sets the user, group, fsGroup, runAsNonRoot, seccomp profile, privilege escalation and capabilities dropped (securityContext, podSecurity), and adds IPC_LOCK with numRoceGdr or serviceAccountName gdr only; if the job needs more, patch the rendered job"},
	{true, diag.Path{"replicas"}, "the generator makes a master and numPods-1 workers (a JobSet: one replicated job of numPods pods)"},
	{true, diag.Path{"resources", "limits", "*"}, "the generator sets limits equal to requests, but for limitCpusPerPod and limitMemoryPerPod; set those"},
	{true, diag.Path{"components", "*"}, "an object the AppWrapper wraps beside the job: settings make the job alone; apply it on its own"},
	{true, diag.Path{"apiVersion"}, "the AppWrapper's older API: the generator writes v1beta2"},
	{true, diag.Path{"spec", "resources", "GenericItems", "**"}, "the AppWrapper's older API (v1beta1, MCAD): its fields are not in v1beta2; Kueue reads the pods' requests"},
	{true, diag.Path{"schedulingSpec", "**"}, "the AppWrapper's older API (v1beta1, MCAD): Kueue admits the job whole, with no minAvailable"},
	{true, diag.Path{"labels", "*"}, "a label of the job alone has no setting: customLabels go on the AppWrapper, the job and every pod alike (set it there if that suits), podLabels on the pods"},
	{true, diag.Path{"annotations", "*"}, "no setting annotates the AppWrapper or the job; podAnnotations annotate the pods"},
}
