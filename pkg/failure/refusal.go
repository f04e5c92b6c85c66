package failure

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Refused is the reason of a failure that is no pod's: the API server
// refused to create the job's pods, as the controller that creates them
// says in a Warning event (or the AppWrapper in its condition, of the job
// it wraps).
const Refused = "Refused"

// refusingReasons are the reasons of the events in which a controller says
// that the API server refused to create a pod (or an object) of a job: the
// training operator's (on a PyTorchJob) and T9k's FailedCreatePod, the Job
// controller's FailedCreate (on a JobSet's Jobs, a TrainJob's through its
// JobSet), and the AppWrapper controller's CreateFailed (its Unhealthy
// condition, of the job it wraps).
var refusingReasons = map[string]bool{"FailedCreatePod": true, "FailedCreate": true, "CreateFailed": true}

// A guard is what refused a pod: the words of the API server's refusal
// that name it, and whether it refuses the same pod every time (not a
// quota, which other pods' end may free, nor an object that may yet be
// made).
type guard struct {
	words   *regexp.Regexp
	name    func(m []string) string
	certain bool
	fix     func(m []string) string
}

// guards are the guards of a namespace, by the API server's words, the
// first that matches.
var guards = []guard{{
	words:   regexp.MustCompile(`violates PodSecurity "([a-z]+):([^"]+)"`),
	name:    func(m []string) string { return fmt.Sprintf("Pod Security %s (%s)", m[1], m[2]) },
	certain: true,
	fix: func(m []string) string {
		return fmt.Sprintf("set podSecurity: %s in the settings (generator explain podSecurity), and see what else the namespace refuses with generator check", m[1])
	},
}, {
	words: regexp.MustCompile(`(?:exceeded|failed) quota: ([^,:]+)`),
	name:  func(m []string) string { return fmt.Sprintf("ResourceQuota %s", m[1]) },
	fix: func(m []string) string {
		return fmt.Sprintf("ask for less, or ask an administrator to raise ResourceQuota %s; generator check compares the job with it", m[1])
	},
}, {
	words:   regexp.MustCompile(`(?:usage per (?:Container|Pod)|max limit to request ratio per (?:Container|Pod))`),
	name:    func([]string) string { return "LimitRange" },
	certain: true,
	fix: func([]string) string {
		return "ask for what the namespace's LimitRange allows a container and a pod; generator check names its bounds"
	},
}, {
	words:   regexp.MustCompile(`admission webhook "([^"]+)" denied the request`),
	name:    func(m []string) string { return fmt.Sprintf("admission webhook %s", m[1]) },
	certain: true,
	fix:     func([]string) string { return "change what it refuses, or ask its owner, an administrator" },
}, {
	words:   regexp.MustCompile(`ValidatingAdmissionPolicy '([^']+)'(?: with binding '[^']+')? denied request`),
	name:    func(m []string) string { return fmt.Sprintf("ValidatingAdmissionPolicy %s", m[1]) },
	certain: true,
	fix:     func([]string) string { return "change what it refuses, or ask its owner, an administrator" },
}, {
	words:   regexp.MustCompile(`is invalid: `),
	name:    func([]string) string { return "validation" },
	certain: true,
	fix:     func([]string) string { return "generator check says the same of the settings" },
}, {
	words: regexp.MustCompile(`is forbidden: `),
	name:  func([]string) string { return "admission" },
	fix:   func([]string) string { return "generator check may say why" },
}}

// refusedPod is the start of a refusal that names the pod refused, as the
// controllers write it: `Error creating: pods "ng1-master-0" is forbidden: `.
var refusedPod = regexp.MustCompile(`^(?:Error creating: )?(?:error creating components: )?[A-Za-z0-9.]+ "[^"]*" is (?:forbidden|invalid): `)

// Words are the API server's words of a refusal, or of any message about
// a pod, without what names the pod (and the controller's lead), by which
// the same words of each pod differ: `Error creating: pods "ng1-master-0"
// is forbidden: violates ...` are `violates ...`.
func Words(message string) string {
	if m := refusedPod.FindStringIndex(message); m != nil {
		return message[m[1]:]
	}
	return strings.TrimPrefix(strings.TrimPrefix(message, "Error creating: "), "error creating components: ")
}

// FromRefusal reads the failure an event of a job's controller says, when
// the API server refused to create one of the job's pods: what refused
// them (Guard), in the API server's words (Message, without the pod's
// name, so that the refusals of all its pods are one), and the fix.
// object says whose event it is (PyTorchJob ng1, Job ng1-node-0). False
// for any other event.
func FromRefusal(e *corev1.Event, object string) (Failure, bool) {
	at := e.FirstTimestamp.Time
	if at.IsZero() {
		at = e.EventTime.Time
	}
	if at.IsZero() {
		at = e.CreationTimestamp.Time
	}
	return refusal(e.Reason, e.Message, object, string(e.InvolvedObject.UID), at)
}

// Refusing reads the refusal that a reason and message say, of a job's
// condition (the AppWrapper's Unhealthy, CreateFailed, when the API server
// refused the job it wraps) or of an event as status shows it; false for
// any other.
func Refusing(reason, message, object, uid string, at time.Time) (Failure, bool) {
	return refusal(reason, message, object, uid, at)
}

// RefusingReasons are the reasons of the events that may say a refusal
// of pods, in order.
func RefusingReasons() []string { return slices.Sorted(maps.Keys(refusingReasons)) }

func refusal(reason, message, object, uid string, at time.Time) (Failure, bool) {
	if !refusingReasons[reason] {
		return Failure{}, false
	}
	message = oneLine(message)
	words := Words(message)
	for _, g := range guards {
		m := g.words.FindStringSubmatch(message)
		if m == nil {
			continue
		}
		f := Failure{Key: "refused/" + uid + "/" + g.name(m), Object: object, Reason: Refused, Message: words, At: at,
			Guard: g.name(m), Fix: g.fix(m), Certain: g.certain}
		return f, true
	}
	return Failure{}, false
}

// refusedString says a refusal in one line: what refused the pods, whose
// controller said so, the API server's words and the fix; and, when the
// guard refuses the same pods every time, that every retry will fail the
// same way.
func (f Failure) refusedString() string {
	what := "the job's pods"
	if strings.HasPrefix(f.Object, "AppWrapper ") {
		// Its condition is of the job it wraps, which it creates.
		what = "the job it wraps"
	}
	text := fmt.Sprintf("the API server refuses to create %s (%s, as %s says): %s; %s", what, f.Guard, f.Object, f.Message, f.Fix)
	if f.Certain {
		text += "; every retry will be refused the same way"
	}
	return text
}

// quotaLimited is the list of what a quota allows, in a refusal's words:
// "limited: requests.nvidia.com/gpu=2,pods=4".
var quotaLimited = regexp.MustCompile(`limited: (\S+)`)

// QuotaLimits are what the ResourceQuota that refused the pods allows, by
// resource, as its refusal says; none for a refusal of another guard.
func (f Failure) QuotaLimits() map[corev1.ResourceName]resource.Quantity {
	m := quotaLimited.FindStringSubmatch(f.Message)
	if f.Reason != Refused || m == nil {
		return nil
	}
	limits := map[corev1.ResourceName]resource.Quantity{}
	for _, pair := range strings.Split(m[1], ",") {
		name, value, ok := strings.Cut(pair, "=")
		if q, err := resource.ParseQuantity(value); ok && err == nil {
			limits[corev1.ResourceName(name)] = q
		}
	}
	return limits
}
