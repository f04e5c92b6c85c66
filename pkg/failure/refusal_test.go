package failure

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// event is a Warning event of a job's controller, as the API server keeps
// it.
func event(reason, message string) *corev1.Event {
	return &corev1.Event{Reason: reason, Message: message, Type: corev1.EventTypeWarning, FirstTimestamp: metav1.NewTime(start),
		InvolvedObject: corev1.ObjectReference{Kind: "PyTorchJob", Name: "ng1", UID: "uid-ng1"}}
}

// A refusal of the API server, as the controller that creates the pods
// says it: the guard named, its words without the pod's (so the refusals
// of every pod are one failure), the fix, and whether every retry will be
// refused the same way.
func TestARefusalOfThePods(t *testing.T) {
	for _, c := range []struct {
		name, reason, message string
		guard, line           string
		certain               bool
	}{{
		"Pod Security, as the training operator says it", "FailedCreatePod",
		`Error creating: pods "ng1-master-0" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "pytorch" must set securityContext.allowPrivilegeEscalation=false)`,
		"Pod Security restricted (latest)",
		`the API server refuses to create the job's pods (Pod Security restricted (latest), as PyTorchJob ng1 says): violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "pytorch" must set securityContext.allowPrivilegeEscalation=false); set podSecurity: restricted in the settings (generator explain podSecurity), and see what else the namespace refuses with generator check; every retry will be refused the same way`,
		true,
	}, {
		"a ResourceQuota, as the Job controller says it", "FailedCreate",
		`Error creating: pods "ng1-node-0-1-x7k2p" is forbidden: exceeded quota: team-gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2`,
		"ResourceQuota team-gpus",
		`the API server refuses to create the job's pods (ResourceQuota team-gpus, as PyTorchJob ng1 says): exceeded quota: team-gpus, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2; ask for less, or ask an administrator to raise ResourceQuota team-gpus; generator check compares the job with it`,
		false,
	}, {
		"a LimitRange", "FailedCreatePod",
		`Error creating: pods "ng1-master-0" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi`,
		"LimitRange", "", true,
	}, {
		"a webhook", "FailedCreate",
		`Error creating: admission webhook "pods.policy.example.com" denied the request: images must come from registry.example.com`,
		"admission webhook pods.policy.example.com", "", true,
	}, {
		"a ValidatingAdmissionPolicy", "FailedCreate",
		`Error creating: pods "ng1-node-0-0-abcde" is forbidden: ValidatingAdmissionPolicy 'no-root' with binding 'no-root-binding' denied request: pods must not run as root`,
		"ValidatingAdmissionPolicy no-root", "", true,
	}, {
		"a ServiceAccount that may yet be made", "FailedCreatePod",
		`Error creating: pods "ng1-master-0" is forbidden: error looking up service account ml/trainer: serviceaccount "trainer" not found`,
		"admission", "", false,
	}} {
		t.Run(c.name, func(t *testing.T) {
			f, ok := FromRefusal(event(c.reason, c.message), "PyTorchJob ng1")
			require.True(t, ok)
			require.Equal(t, c.guard, f.Guard)
			require.Equal(t, c.certain, f.Certain)
			require.Equal(t, "refused/uid-ng1/"+c.guard, f.Key)
			require.NotContains(t, f.Message, "ng1-master-0", "the words of every pod's refusal are one")
			if c.line != "" {
				require.Equal(t, c.line, f.String())
			}
		})
	}
	// Other warnings are no refusal.
	_, ok := FromRefusal(event("FailedScheduling", "0/18 nodes are available"), "PyTorchJob ng1")
	require.False(t, ok)
	_, ok = FromRefusal(event("FailedCreatePod", "Error creating: Timeout: request did not complete"), "PyTorchJob ng1")
	require.False(t, ok)
}

// The AppWrapper's own refusal, of the job it wraps, in its condition.
func TestARefusalOfTheWrappedJob(t *testing.T) {
	f, ok := Refusing("CreateFailed", `error creating components: admission webhook "vpytorchjob.kb.io" denied the request: spec.pytorchReplicaSpecs: Forbidden`, "AppWrapper ng1", "uid-aw", start)
	require.True(t, ok)
	require.Equal(t, `admission webhook "vpytorchjob.kb.io" denied the request: spec.pytorchReplicaSpecs: Forbidden`, f.Message)
	_, ok = Refusing("FoundFailedPods", "1 failed pods", "AppWrapper ng1", "uid-aw", start)
	require.False(t, ok)
}

// A quota's refusal says what the quota allows, which the job's totals
// are compared with.
func TestWhatARefusingQuotaAllows(t *testing.T) {
	f, _ := FromRefusal(event("FailedCreate", `Error creating: pods "p" is forbidden: exceeded quota: q, requested: pods=1,requests.nvidia.com/gpu=1, used: pods=2,requests.nvidia.com/gpu=2, limited: pods=2,requests.nvidia.com/gpu=2`), "Job ng1-node-0")
	require.Equal(t, map[corev1.ResourceName]resource.Quantity{"pods": resource.MustParse("2"), "requests.nvidia.com/gpu": resource.MustParse("2")}, f.QuotaLimits())
}

// A refused attempt is told as what refused it, not as failed pods.
func TestTheHeadlineOfARefusedAttempt(t *testing.T) {
	f, _ := FromRefusal(event("FailedCreatePod", `Error creating: pods "ng1-master-0" is forbidden: maximum memory usage per Container is 2Gi, but limit is 4Gi`), "PyTorchJob ng1")
	a := Attempt{Number: 2, Of: 4, Failures: []Failure{f}}
	require.Equal(t, `attempt 2 of 4: the API server refuses to create the job's pods (LimitRange, as PyTorchJob ng1 says): maximum memory usage per Container is 2Gi, but limit is 4Gi; ask for what the namespace's LimitRange allows a container and a pod; generator check names its bounds; every retry will be refused the same way`,
		a.Headline())
}
