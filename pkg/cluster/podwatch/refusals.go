package podwatch

import corev1 "k8s.io/api/core/v1"

// refused notices the refusal of the job's pods that a Warning event of
// another object says (Job.Refusal), once: of the attempt the job was in
// when the first refusal of that object was noticed, as a pod's failures
// are of the attempt it was in. Then the follower reads the job again, as
// when its pods change: the refusal may be its end.
func (f *failures) refused(e *corev1.Event) {
	failed, ok := f.job.Refusal(e)
	if !ok || f.noticed[failed.Key] {
		return
	}
	f.noticed[failed.Key] = true
	if _, ok := f.attempts[e.InvolvedObject.UID]; !ok {
		f.attempts[e.InvolvedObject.UID] = f.job.Attempt()
	}
	f.job.Failed(f.attempts[e.InvolvedObject.UID], failed)
	if f.watch.Moved != nil {
		f.watch.Moved()
	}
}
