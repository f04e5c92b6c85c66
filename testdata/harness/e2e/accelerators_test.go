//go:build e2e && linux

package e2e_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/testdata/cases"
)

// The objects of the scenario accelerators, which it makes and takes away
// again: its namespace and LocalQueue, a ClusterQueue that admits only that
// namespace's jobs, and for each vendor of accelNodes its kwok nodes and a
// ResourceFlavor that picks them.
const (
	accelNamespace    = "sim-accelerators"
	accelQueue        = "accelerators-queue"
	accelClusterQueue = "accelerators-cq"
	// accelLabel names the vendor of a node of the scenario (amd, gaudi);
	// the flavors' nodeLabels select on it.
	accelLabel = "sim.torchwrap.dev/accelerator"
	// accelTaint keeps every pod but the scenario's (whose flavors tolerate
	// it) off its nodes.
	accelTaint = "sim.torchwrap.dev/accelerators"
)

// accelVendor is a vendor's nodes in the scenario accelerators: nodes of
// them, each offering per of resource, and the ResourceFlavor that picks
// them, whose quota in accelClusterQueue is all those accelerators.
type accelVendor struct {
	vendor, resource, flavor string
	nodes, per               int
}

var accelVendors = []accelVendor{
	{vendor: "amd", resource: "amd.com/gpu", flavor: "sim-amd-flavor", nodes: 4, per: 8},
	{vendor: "gaudi", resource: "habana.ai/gaudi", flavor: "sim-gaudi-flavor", nodes: 2, per: 8},
}

func (v accelVendor) node(i int) string { return fmt.Sprintf("%s-node-%d", v.vendor, i) }
func (v accelVendor) quota() int        { return v.nodes * v.per }

// accelObjects are the scenario's nodes (managed by kwok, as the cluster's
// fake GPU nodes are, but of another type and tainted accelTaint), its
// ResourceFlavors and its ClusterQueue: one resource group of cpu, memory
// and every vendor's resource, each flavor with quota for its own vendor's
// accelerators and none of the others', so that Kueue gives a job the
// flavor of the accelerators it asks for. The flavors are listed last
// vendor first, Kueue trying them in that order: with AMD's flavor first,
// its message for the AMD job it cannot admit named only the Gaudi flavor
// ("> maximum capacity (0)"); with AMD's last, it names AMD's flavor and
// its capacity too.
func accelObjects() string {
	var b strings.Builder
	var resources []string
	for _, v := range accelVendors {
		resources = append(resources, v.resource)
		for i := range v.nodes {
			fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok-accelerator
    kubernetes.io/hostname: %[1]s
    %[2]s: %[3]s
spec:
  taints:
  - {key: %[4]s, value: "true", effect: NoSchedule}
status:
  allocatable: &resources
    cpu: "128"
    memory: 2Ti
    pods: "110"
    %[5]s: "%[6]d"
  capacity: *resources
`, v.node(i), accelLabel, v.vendor, accelTaint, v.resource, v.per)
		}
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: %s}
spec:
  nodeLabels: {%s: %s}
  tolerations:
  - {key: %s, operator: Exists, effect: NoSchedule}
`, v.flavor, accelLabel, v.vendor, accelTaint)
	}
	fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: %s}
spec:
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: %s}
  resourceGroups:
  - coveredResources: [cpu, memory, %s]
    flavors:
`, accelClusterQueue, accelNamespace, strings.Join(resources, ", "))
	for _, v := range slices.Backward(accelVendors) {
		fmt.Fprintf(&b, "    - name: %s\n      resources:\n      - {name: cpu, nominalQuota: 512}\n      - {name: memory, nominalQuota: 8Ti}\n", v.flavor)
		for _, other := range accelVendors {
			quota := 0
			if other == v {
				quota = v.quota()
			}
			fmt.Fprintf(&b, "      - {name: %s, nominalQuota: %d}\n", other.resource, quota)
		}
	}
	return b.String()
}

// accelPod is what the scenario reads of a pod.
type accelPod struct {
	Metadata struct{ Name string }
	Spec     struct {
		NodeName   string
		Containers []struct {
			Resources struct{ Requests map[string]string }
		}
	}
	Status struct{ Phase string }
}

// accelWorkload is what the scenario reads of a Kueue Workload.
type accelWorkload struct {
	Metadata struct {
		OwnerReferences []struct{ Name string }
	}
	Status struct {
		Admission *struct {
			ClusterQueue      string `json:"clusterQueue"`
			PodSetAssignments []struct {
				Name    string
				Flavors map[string]string
			} `json:"podSetAssignments"`
		}
		Conditions []struct{ Type, Status, Reason, Message string }
	}
}

func (w accelWorkload) condition(kind string) bool {
	return slices.ContainsFunc(w.Status.Conditions, func(c struct{ Type, Status, Reason, Message string }) bool {
		return c.Type == kind && c.Status == "True"
	})
}

// Accelerators of other vendors than NVIDIA (gpuResName), in a part of the
// simulated cluster of the scenario's own: kwok nodes that offer amd.com/gpu
// and habana.ai/gaudi (tainted, with a label of their own), a
// ResourceFlavor of each vendor that picks them, and a ClusterQueue with
// quota for both. A job of each kind the generator renders, asking for
// gpuResName amd.com/gpu (the JobSet habana.ai/gaudi), is admitted with its
// vendor's flavor; the pods of a PyTorchJob (wrapped and bare), a JobSet
// (wrapped and bare) and a TrainJob are bound to that vendor's nodes, ask for
// its accelerators and run (under kwok); a T9k job (no T9k controller runs
// here) is created by its AppWrapper with the flavor's node selector and
// toleration in its pod templates. generator list counts each job's
// accelerators in GPUS, generator status gives their number and resource;
// a job asking for more amd.com/gpu than the ClusterQueue has stays Queued,
// and status says why in Kueue's words. generator check of a job whose
// gpuResName no node offers says so, and exits 1. Everything is taken away
// at the end, so the other scenarios see the cluster as it was.
func (s *sim) accelerators(t *testing.T) {
	start := time.Now()
	settings := cases.Path(t, "testdata", "sim", "accelerators.settings.yaml")
	dir := cases.Path(t, "testdata", "sim")
	objects := []byte(accelObjects())
	kubectl(t, s.cluster, objects, "create", "-f", "-")
	t.Cleanup(func() {
		began := time.Now()
		// The jobs first (and with them their pods and Workloads), then
		// the namespace, then the ClusterQueue, whose finalizer waits for
		// its Workloads to go, the flavors and the nodes.
		kubectl(t, s.cluster, nil, "delete", "appwrappers,pytorchjobs,jobsets,trainjobs", "--all", "-n", accelNamespace, "--wait=true", "--timeout=2m")
		kubectl(t, s.cluster, nil, "delete", "namespace", accelNamespace, "--ignore-not-found", "--wait=true", "--timeout=2m")
		kubectl(t, s.cluster, objects, "delete", "-f", "-", "--wait=true", "--timeout=2m")
		left := kubectl(t, s.cluster, nil, "get", "nodes,resourceflavors,clusterqueues", "-o", "name")
		for _, v := range accelVendors {
			require.NotContains(t, left, v.flavor)
			require.NotContains(t, left, "node/"+v.node(0))
		}
		require.NotContains(t, left, accelClusterQueue)
		t.Logf("accelerators: taken away in %s", time.Since(began).Round(time.Millisecond))
	})
	var nodeNames []string
	for _, v := range accelVendors {
		for i := range v.nodes {
			nodeNames = append(nodeNames, v.node(i))
		}
	}
	s.waitFor(t, "default", "the accelerators' nodes Ready and their ClusterQueue active", time.Minute, func() bool {
		ready := kubectl(t, s.cluster, nil, append([]string{"get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`}, nodeNames...)...)
		active := kubectl(t, s.cluster, nil, "get", "clusterqueue", accelClusterQueue, "-o", `jsonpath={.status.conditions[?(@.type=="Active")].status}`)
		return strings.Count(ready, "True") == len(nodeNames) && active == "True"
	})
	ensureNamespace(t, s.cluster, accelNamespace)
	kubectl(t, s.cluster, []byte(fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: %s, namespace: %s}
spec: {clusterQueue: %s}
`, accelQueue, accelNamespace, accelClusterQueue)), "create", "-f", "-")
	t.Logf("accelerators: nodes, flavors and queues ready in %s", time.Since(start).Round(time.Millisecond))

	amd, gaudi := accelVendors[0], accelVendors[1]
	type job struct {
		name string
		// kind is the job's own kind (wrapped or not); wrapped, whether
		// an AppWrapper wraps it.
		kind    string
		wrapped bool
		vendor  accelVendor
		// each is numGpusPerPod (numPods is 2).
		each int
		args []string
	}
	jobs := []job{
		{"aw-pytorchjob", "PyTorchJob", true, amd, 2, nil},
		{"pytorchjob", "PyTorchJob", false, amd, 2, []string{"--set", "wrapper=none"}},
		{"aw-jobset", "JobSet", true, gaudi, 4, []string{"--set", "gpuResName=" + gaudi.resource, "--set", "numGpusPerPod=4"}},
		{"jobset", "JobSet", false, amd, 2, []string{"--set", "wrapper=none"}},
		{"trainjob", "TrainJob", false, amd, 2, nil},
		{"aw-pytorchtrainingjob", "PyTorchTrainingJob", true, amd, 2, nil},
		{"aw-deepspeedjob", "DeepSpeedJob", true, amd, 2, nil},
	}
	const pods = 2
	for _, j := range jobs {
		manifest := s.render(t, settings, append([]string{"--set", "jobName=" + j.name, "--set", "jobKind=" + j.kind}, j.args...)...)
		kind := jsonObject(t, cases.Objects(t, manifest)[0])["kind"]
		require.Equal(t, map[bool]string{true: "AppWrapper", false: j.kind}[j.wrapped], kind, "the kind of %s", j.name)
		kubectl(t, s.cluster, manifest, "create", "-f", "-")
	}
	// More of amd.com/gpu than the ClusterQueue has at all.
	const overPods, overEach = 5, 8
	require.Greater(t, overPods*overEach, amd.quota())
	kubectl(t, s.cluster, s.render(t, settings, "--set", "jobName=too-many", "--set", fmt.Sprintf("numPods=%d", overPods),
		"--set", fmt.Sprintf("numGpusPerPod=%d", overEach)), "create", "-f", "-")

	workloads := func() map[string]accelWorkload {
		var list struct{ Items []accelWorkload }
		require.NoError(t, json.Unmarshal([]byte(kubectl(t, s.cluster, nil, "get", "workloads", "-n", accelNamespace, "-o", "json")), &list))
		byOwner := map[string]accelWorkload{}
		for _, w := range list.Items {
			if len(w.Metadata.OwnerReferences) > 0 {
				byOwner[w.Metadata.OwnerReferences[0].Name] = w
			}
		}
		return byOwner
	}
	s.waitFor(t, accelNamespace, "every job of the accelerators admitted", 2*time.Minute, func() bool {
		ws := workloads()
		for _, j := range jobs {
			if w := ws[j.name]; !w.condition("QuotaReserved") || !w.condition("Admitted") {
				return false
			}
		}
		return true
	})
	t.Logf("accelerators: %d jobs admitted in %s", len(jobs), time.Since(start).Round(time.Millisecond))
	ws := workloads()
	for _, j := range jobs {
		w := ws[j.name]
		require.NotNil(t, w.Status.Admission, "the Workload of %s", j.name)
		require.Equal(t, accelClusterQueue, w.Status.Admission.ClusterQueue, "the ClusterQueue of %s", j.name)
		require.NotEmpty(t, w.Status.Admission.PodSetAssignments, "the podSets of %s", j.name)
		for _, a := range w.Status.Admission.PodSetAssignments {
			require.Equal(t, j.vendor.flavor, a.Flavors[j.vendor.resource], "the flavor of %s's %s in podSet %s of %s", j.vendor.resource, j.name, a.Name, j.name)
		}
	}

	for _, j := range jobs {
		switch j.kind {
		case "PyTorchJob", "JobSet", "TrainJob":
			label := "jobset.sigs.k8s.io/jobset-name"
			if j.kind == "PyTorchJob" {
				label = "training.kubeflow.org/job-name"
			}
			var list struct{ Items []accelPod }
			s.waitFor(t, accelNamespace, fmt.Sprintf("the %d pods of %s Running", pods, j.name), 2*time.Minute, func() bool {
				list.Items = nil
				require.NoError(t, json.Unmarshal([]byte(kubectl(t, s.cluster, nil, "get", "pods", "-n", accelNamespace, "-l", label+"="+j.name, "-o", "json")), &list))
				running := 0
				for _, p := range list.Items {
					if p.Status.Phase == "Running" {
						running++
					}
				}
				return len(list.Items) == pods && running == pods
			})
			for _, p := range list.Items {
				require.True(t, strings.HasPrefix(p.Spec.NodeName, j.vendor.vendor+"-node-"), "pod %s of %s bound to %q, not a node of %s", p.Metadata.Name, j.name, p.Spec.NodeName, j.vendor.resource)
				var asked []string
				for _, c := range p.Spec.Containers {
					if q := c.Resources.Requests[j.vendor.resource]; q != "" {
						asked = append(asked, q)
					}
				}
				require.Equal(t, []string{fmt.Sprint(j.each)}, asked, "the %s that pod %s asks for", j.vendor.resource, p.Metadata.Name)
			}
			t.Logf("accelerators: %s (%s): pods Running on %s", j.name, j.kind, strings.Join(nodesOf(list.Items), ", "))
		default:
			// No T9k controller runs here: the AppWrapper creates the job,
			// with what Kueue's flavor puts in every pod template.
			s.waitPhase(t, accelNamespace, j.name, "Running", time.Minute)
			inner := s.get(t, accelNamespace, strings.ToLower(j.kind), j.name)
			selectors, tolerations := podTemplates(inner["spec"])
			require.Len(t, selectors, len(ws[j.name].Status.Admission.PodSetAssignments), "the pod templates of %s %s, one a podSet: %v", j.kind, j.name, inner["spec"])
			for i, selector := range selectors {
				require.Equal(t, j.vendor.vendor, selector[accelLabel], "the node selector of pod template %d of %s", i, j.name)
				require.Contains(t, fmt.Sprint(tolerations[i]), accelTaint, "the tolerations of pod template %d of %s", i, j.name)
			}
			t.Logf("accelerators: %s (%s, in an AppWrapper): created with the node selector of %s", j.name, j.kind, j.vendor.flavor)
		}
	}

	// too-many waits, Kueue saying why.
	var st cluster.Status
	s.waitFor(t, accelNamespace, "too-many Queued for want of amd.com/gpu quota", time.Minute, func() bool {
		st = s.state(t, accelNamespace, "too-many")
		return st.State == cluster.Queued && strings.Contains(st.Message, "insufficient quota for "+amd.resource)
	})
	t.Logf("accelerators: too-many: %s: %s", st.Reason, st.Message)
	require.Contains(t, st.Message, fmt.Sprintf("insufficient quota for %s in flavor %s", amd.resource, amd.flavor))
	require.Contains(t, st.Message, fmt.Sprintf("> maximum capacity (%d)", amd.quota()))
	require.Equal(t, int64(overPods*overEach), st.GPUs)
	require.Equal(t, amd.resource, st.GPUResource)
	require.False(t, workloads()["too-many"].condition("QuotaReserved"), "too-many holds no quota")
	require.Empty(t, strings.TrimSpace(kubectl(t, s.cluster, nil, "get", "pods", "-n", accelNamespace, "-l", "training.kubeflow.org/job-name=too-many", "-o", "name")))
	r := s.generate(t, dir, "status", "too-many", "-n", accelNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("generator status too-many:\n%s", r.stdout)
	require.Contains(t, r.stdout, "insufficient quota for "+amd.resource)
	require.Regexp(t, fmt.Sprintf(`(?m)^  gpus: +%d %s$`, overPods*overEach, regexp.QuoteMeta(amd.resource)), r.stdout)

	// generator list and status count every job's accelerators.
	want := map[string]int64{"too-many": overPods * overEach}
	for _, j := range jobs {
		want[j.name] = int64(pods * j.each)
	}
	listed := s.listed(t, accelNamespace)
	gpus := map[string]int64{}
	for name, job := range listed {
		gpus[name] = job.GPUs
	}
	require.Equal(t, want, gpus, "GPUs of generator list -o json")
	r = s.generate(t, dir, "list", "-n", accelNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	t.Logf("generator list -n %s:\n%s", accelNamespace, r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	column := slices.Index(strings.Fields(lines[0]), "GPUS")
	require.GreaterOrEqual(t, column, 0, "a GPUS column: %s", lines[0])
	table := map[string]int64{}
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		var n int64
		_, err := fmt.Sscan(fields[column], &n)
		require.NoError(t, err, "GPUS of %q", line)
		table[fields[0]] = n
	}
	require.Equal(t, want, table, "the GPUS column of generator list")
	for _, j := range jobs {
		st := s.state(t, accelNamespace, j.name)
		require.Equal(t, int64(pods*j.each), st.GPUs, "gpus of generator status %s", j.name)
		require.Equal(t, j.vendor.resource, st.GPUResource, "gpuResource of generator status %s", j.name)
		require.Equal(t, accelClusterQueue, st.ClusterQueue, "the ClusterQueue of generator status %s", j.name)
		require.NotEqual(t, cluster.Queued, st.State, "generator status %s", j.name)
	}
	r = s.generate(t, dir, "status", "aw-jobset", "-n", accelNamespace, "--kubeconfig", "ADMIN")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^  gpus: +%d %s$`, pods*4, regexp.QuoteMeta(gaudi.resource)), r.stdout)

	// generator check: the scenario's settings pass; with accelerators no
	// node offers, it says so.
	r = s.generate(t, dir, "check", "-f", "accelerators.settings.yaml", "--kubeconfig", "ADMIN", "--set", "jobName=checked")
	require.Equal(t, 0, r.code, "generator check of amd.com/gpu:\n%s%s", r.stdout, r.stderr)
	r = s.generate(t, dir, "check", "-f", "accelerators.settings.yaml", "--kubeconfig", "ADMIN", "--set", "jobName=checked", "--set", "gpuResName=example.com/npu")
	t.Logf("generator check of example.com/npu:\n%s%s", r.stdout, r.stderr)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no node of the cluster offers example.com/npu")
	t.Logf("accelerators: done in %s, before the clean-up", time.Since(start).Round(time.Millisecond))
}

// nodesOf are the nodes of pods, sorted.
func nodesOf(pods []accelPod) []string {
	var nodes []string
	for _, p := range pods {
		nodes = append(nodes, p.Spec.NodeName)
	}
	slices.Sort(nodes)
	return nodes
}

// podTemplates are the node selectors and tolerations of the pod templates
// in a job's spec: of every map with a key template that holds a spec with
// containers, in the order of a walk of the spec (map keys sorted).
func podTemplates(v any) (selectors []map[string]any, tolerations []any) {
	switch v := v.(type) {
	case map[string]any:
		if template, ok := v["template"].(map[string]any); ok {
			if spec, ok := template["spec"].(map[string]any); ok {
				if _, ok := spec["containers"]; ok {
					selector, _ := spec["nodeSelector"].(map[string]any)
					return []map[string]any{selector}, []any{spec["tolerations"]}
				}
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s, t := podTemplates(v[k])
			selectors, tolerations = append(selectors, s...), append(tolerations, t...)
		}
	case []any:
		for _, each := range v {
			s, t := podTemplates(each)
			selectors, tolerations = append(selectors, s...), append(tolerations, t...)
		}
	}
	return selectors, tolerations
}
