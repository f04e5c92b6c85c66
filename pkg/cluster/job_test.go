package cluster

import "testing"

// A job read back from the cluster counts its pods as the rendered one does,
// though its numbers are integers, not YAML's floats.
func TestJobOfObjectFromCluster(t *testing.T) {
	for name, tc := range map[string]struct {
		manifest string
		pods     int64
	}{
		"AppWrapper with podSets": {`
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: demo, namespace: ml}
spec:
  components:
  - podSets:
    - {path: template.spec.worker.template, replicas: 3}
    template:
      apiVersion: batch.tensorstack.dev/v1beta1
      kind: DeepSpeedJob
      spec:
        worker:
          replicas: 3
          template: {spec: {containers: [{name: worker, image: busybox}]}}
`, 3},
		"AppWrapper around a PyTorchJob": {`
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: demo, namespace: ml}
spec:
  components:
  - template:
      apiVersion: kubeflow.org/v1
      kind: PyTorchJob
      spec:
        pytorchReplicaSpecs:
          Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
          Worker: {replicas: 3, template: {spec: {containers: [{name: pytorch, image: busybox}]}}}
`, 4},
		"a podSet without replicas is one pod": {`
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {name: demo, namespace: ml}
spec:
  components:
  - podSets:
    - {path: template.spec.worker.template}
    template:
      apiVersion: batch.tensorstack.dev/v1beta1
      kind: DeepSpeedJob
      spec:
        worker:
          template: {spec: {containers: [{name: worker, image: busybox}]}}
`, 1},
	} {
		t.Run(name, func(t *testing.T) {
			job, err := JobOf(object(t, tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if got := job.Pods(); got != tc.pods {
				t.Errorf("Pods() = %d, want %d", got, tc.pods)
			}
		})
	}
}
