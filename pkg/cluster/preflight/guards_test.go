package preflight

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// labelled is a fake cluster whose namespace ml has Pod Security labels,
// with the TrainJob's runtime.
func labelled(labels map[string]string) clustertest.Fake {
	runtime := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: torch-distributed}\n"
	return clustertest.Fake{Objects: runtime, React: func(dyn *dynamicfake.FakeDynamicClient) {
		ns, err := dyn.Tracker().Get(namespaces, "", "ml")
		if err != nil {
			panic(err)
		}
		u := ns.(*unstructured.Unstructured)
		u.SetLabels(labels)
		if err := dyn.Tracker().Update(namespaces, u, ""); err != nil {
			panic(err)
		}
	}}
}

// restrictedWords are what the Kubernetes project's evaluator says of a
// pod of the chart without podSecurity, at level restricted: what the API
// server says when it refuses it.
const restrictedWords = `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "%[1]s" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "%[1]s" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "%[1]s" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "%[1]s" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

// The chart's pod templates of every kind, evaluated at each level: as
// they are, they meet baseline and not restricted, at podSecurity's line
// with the API server's words; with podSecurity: restricted they meet
// both.
func TestCheckPodSecurityOfEveryKindAtEachLevel(t *testing.T) {
	kinds := map[string]string{"PyTorchJob": "pytorch", "JobSet": "pytorch", "TrainJob": "node", "PyTorchTrainingJob": "pytorch", "DeepSpeedJob": "worker"}
	for kind, container := range kinds {
		settings := helloworld + "jobKind: " + kind + "\n"
		if kind == "DeepSpeedJob" {
			settings = strings.Replace(settings, "numPods: 2", "numPods: 1", 1)
		}
		restricted := settings + "podSecurity: restricted\nsecurityContext: {runAsUser: 1000}\n"
		for _, level := range []string{"baseline", "restricted"} {
			f := labelled(map[string]string{"pod-security.kubernetes.io/enforce": level})
			found := check(t, f, settings)
			if level == "baseline" {
				require.Empty(t, found, kind)
			} else {
				require.Equal(t, []string{
					`settings.yaml:1:1: podSecurity: namespace "ml" enforces Pod Security restricted (its label pod-security.kubernetes.io/enforce), and the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: ` +
						fmt.Sprintf(restrictedWords, container) + `; set podSecurity: restricted, which sets what the level needs (generator explain podSecurity)`,
				}, found, kind)
			}
			if kind != "PyTorchJob" || level == "baseline" {
				require.Empty(t, check(t, f, restricted), "%s at %s", kind, level)
			}
		}
	}
}

// The training operator adds an init container of its own to a
// PyTorchJob's workers, which no setting reaches: at restricted, said at
// jobKind, in the words the API server says of the pods it makes; a
// PyTorchJob of one pod has no workers.
func TestCheckPodSecurityOfWhatTheOperatorAdds(t *testing.T) {
	f := labelled(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	restricted := helloworld + "podSecurity: restricted\nsecurityContext: {runAsUser: 1000}\n"
	require.Equal(t, []string{
		`settings.yaml:1:1: jobKind: namespace "ml" enforces Pod Security restricted (its label pod-security.kubernetes.io/enforce), and the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "init-pytorch" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "init-pytorch" must set securityContext.capabilities.drop=["ALL"]); the training operator adds its init container init-pytorch to the workers' pods, as its default template has it, without a security context; use jobKind: JobSet, or numPods: 1 (no workers), or ask an administrator to give the operator an init container template that meets it (--pytorch-init-container-template-file)`,
	}, check(t, f, restricted))
	require.Empty(t, check(t, f, strings.Replace(restricted, "numPods: 2", "numPods: 1", 1)))
}

// RoCE GDR's IPC_LOCK is what baseline refuses: said at numRoceGdr, with
// the version the namespace pins.
func TestCheckPodSecurityRefusesIPCLock(t *testing.T) {
	f := labelled(map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"})
	require.Equal(t, []string{
		`settings.yaml:6:13: numRoceGdr: namespace "ml" enforces Pod Security baseline (its label pod-security.kubernetes.io/enforce), and the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: violates PodSecurity "baseline:v1.30": non-default capabilities (container "pytorch" must not include "IPC_LOCK" in securityContext.capabilities.add); RoCE GDR needs the IPC_LOCK capability, which the level refuses: set numRoceGdr: 0, or ask an administrator for a namespace whose level is privileged`,
	}, check(t, f, helloworld+"numRoceGdr: 1\nqueueName: null\n"))
	// A namespace the role may not read is one line of what check could
	// not see.
	denied := clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.(clienttesting.GetAction).GetName() == "ml" && a.GetVerb() == "get" {
				return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "ml", errors.New("RBAC"))
			}
			return false, nil, nil
		})
	}}
	require.Equal(t, []string{
		`settings.yaml:1:1: could not check: podSecurity: the Pod Security level of namespace "ml" (its labels) (needs get namespaces in namespace ml)`,
	}, check(t, denied, helloworld))
}

// A quota the job's pods would pass in all is an error at the setting that
// asks for the resource; one they would pass only for what others use now,
// a warning; one that does not count them (its scope), nothing.
func TestCheckResourceQuotas(t *testing.T) {
	quotas := `
apiVersion: v1
kind: ResourceQuota
metadata: {name: team-gpus, namespace: ml}
spec: {hard: {requests.nvidia.com/gpu: 8, count/pods: 10}}
status:
  hard: {requests.nvidia.com/gpu: 8, count/pods: 10}
  used: {requests.nvidia.com/gpu: 0, count/pods: 9}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: low-only, namespace: ml}
spec:
  hard: {pods: 1}
  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: In, values: [low-priority]}]}
status: {hard: {pods: 1}, used: {pods: 0}}
`
	require.Equal(t, []string{
		`settings.yaml:3:10: warning: numPods: ResourceQuota "team-gpus" of namespace "ml" has 1 count/pods left (hard 10, used 9), and the job's pods ask for 2 (2 pods): the API server refuses the pods beyond it until other pods of the namespace end (exceeded quota: team-gpus)`,
		`settings.yaml:4:16: numGpusPerPod: ResourceQuota "team-gpus" of namespace "ml" allows 8 requests.nvidia.com/gpu in all (hard), and the job's pods ask for 16 (2 pods × 8): the API server would refuse the pods beyond it when their controller creates them (exceeded quota: team-gpus), after Kueue admitted the job, and the job would never run whole; ask for 8 or less in all, or ask an administrator to raise the quota`,
	}, check(t, clustertest.Fake{Objects: quotas}, helloworld))
	// A quota of CPU makes every container ask for it: an init container
	// does not.
	cpu := `
apiVersion: v1
kind: ResourceQuota
metadata: {name: cpus, namespace: ml}
spec: {hard: {requests.cpu: 100}}
status: {hard: {requests.cpu: 100}, used: {requests.cpu: 0}}
`
	require.Equal(t, []string{
		`settings.yaml:7:5: initContainers[0]: ResourceQuota "cpus" of namespace "ml" counts requests.cpu, and the API server would refuse the job's pods, whose container init does not ask for it (failed quota: cpus: must specify requests.cpu); initContainers take no resources: remove it, or ask an administrator for a LimitRange whose defaults give it, or for a quota that does not count it`,
	}, check(t, clustertest.Fake{Objects: cpu}, helloworld+"initContainers:\n  - {name: init, image: busybox, command: [\"true\"]}\n"))
	// A LimitRange's default request gives it one.
	defaults := cpu + "---\napiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: ml}\nspec: {limits: [{type: Container, default: {cpu: 1}, defaultRequest: {cpu: 500m}}]}\n"
	require.Empty(t, check(t, clustertest.Fake{Objects: defaults}, helloworld+"initContainers:\n  - {name: init, image: busybox, command: [\"true\"]}\n"))
}

// A LimitRange's bounds, in the LimitRanger's words, at the setting of the
// request or the limit.
func TestCheckLimitRanges(t *testing.T) {
	ranges := `
apiVersion: v1
kind: LimitRange
metadata: {name: small, namespace: ml}
spec:
  limits:
  - type: Container
    max: {memory: 2Gi}
    min: {cpu: 2}
    default: {memory: 2Gi}
    defaultRequest: {memory: 2Gi, cpu: 2}
  - type: Pod
    maxLimitRequestRatio: {cpu: 2}
`
	require.Equal(t, []string{
		`settings.yaml:6:18: limitCpusPerPod: LimitRange "small" of namespace "ml": the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: cpu max limit to request ratio per Pod is 2, but provided ratio is 4.000000; keep the limit within 2 times the request`,
		`settings.yaml:7:20: totalMemoryPerPod: LimitRange "small" of namespace "ml": the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: maximum memory usage per Container is 2Gi, but limit is 4Gi; ask for 2Gi or less, or ask an administrator to raise the LimitRange`,
		`settings.yaml:8:16: numCpusPerPod: LimitRange "small" of namespace "ml": the API server would refuse the job's pods when their controller creates them, after Kueue admitted the job: minimum cpu usage per Container is 2, but request is 1; ask for 2 or more`,
	}, check(t, clustertest.Fake{Objects: ranges}, helloworld+"limitCpusPerPod: 4\ntotalMemoryPerPod: 4Gi\nnumCpusPerPod: 1\n"))
}

// A default limit goes into a container that says none, and the pod's
// validation refuses it below the container's own request.
func TestLimitRangeDefaultBelowARequest(t *testing.T) {
	c := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": resource.MustParse("4Gi")}}}
	found := defaults(&c, corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{"memory": resource.MustParse("2Gi")}, DefaultRequest: corev1.ResourceList{"memory": resource.MustParse("2Gi")}})
	require.Len(t, found, 1)
	require.Equal(t, `its default limit of memory, 2Gi, goes into container "init", which asks for 4Gi (must be less than or equal to memory limit of 2Gi)`, found[0].refusal)
	require.Equal(t, resource.MustParse("4Gi"), c.Resources.Requests["memory"], "its own request stays")
	require.Equal(t, resource.MustParse("2Gi"), c.Resources.Limits["memory"])
}

// Where the user may create pods, a dry run of a pod of each template
// says what no guard judged here says: a webhook's refusal. One a finding
// says already is left out; without the right, none is made.
func TestCheckPodsDryRun(t *testing.T) {
	refuse := func(message string) func(*dynamicfake.FakeDynamicClient) {
		return func(dyn *dynamicfake.FakeDynamicClient) {
			dyn.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New(message))
			})
		}
	}
	require.Equal(t, []string{
		`settings.yaml:1:1: the API server refuses the job's pods (a dry-run create of a pod of its template master), as it would when their controller creates them, after Kueue admitted the job: pods is forbidden: admission webhook "pods.policy.example.com" denied the request: images must come from registry.example.com`,
	}, check(t, clustertest.Fake{React: refuse(`admission webhook "pods.policy.example.com" denied the request: images must come from registry.example.com`)}, helloworld))
	guarded := labelled(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	label := guarded.React
	guarded.React = func(dyn *dynamicfake.FakeDynamicClient) {
		label(dyn)
		refuse(`violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`)(dyn)
	}
	found := check(t, guarded, helloworld)
	require.Len(t, found, 1)
	require.Contains(t, found[0], "podSecurity: namespace")
	// The role may not create pods: no dry run, and nothing said of it.
	mayNot := func(dyn *dynamicfake.FakeDynamicClient) {
		refuse("must not be asked")(dyn)
		dyn.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			review := a.(clienttesting.CreateAction).GetObject().DeepCopyObject()
			allowed := !strings.Contains(fmt.Sprint(review), "resource:pods")
			u := review.(interface{ UnstructuredContent() map[string]any }).UnstructuredContent()
			u["status"] = map[string]any{"allowed": allowed}
			return true, review, nil
		})
	}
	require.Empty(t, check(t, clustertest.Fake{React: mayNot}, helloworld))
}
