package preflight

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// tainted are two nodes of 8 GPUs: one of product a100, tainted for the
// team of the flavor that tolerates it, and one of product h100.
const tainted = `
apiVersion: v1
kind: Node
metadata: {name: a100-0, labels: {nvidia.com/gpu.product: a100}}
spec: {taints: [{key: team, value: vision, effect: NoSchedule}]}
status: {allocatable: {cpu: 64, memory: 1Ti, nvidia.com/gpu: 8}}
---
apiVersion: v1
kind: Node
metadata: {name: h100-0, labels: {nvidia.com/gpu.product: h100}}
spec: {unschedulable: true}
status: {allocatable: {cpu: 64, memory: 1Ti, nvidia.com/gpu: 8}}
`

// No node that offers the GPUs takes the pods: their nodeSelector matches
// none, or their taints are not tolerated (a cordoned node's too); said at
// the setting to change. A flavor of the ClusterQueue that tolerates the
// taint makes the node take them, as Kueue adds its tolerations.
func TestCheckNodesThatTakeThePods(t *testing.T) {
	require.Equal(t, []string{
		`settings.yaml:6:15: nodeSelector: no node takes the job's pods: of the 3 nodes that offer 8 nvidia.com/gpu, 3 do not match the pods' node selector and affinity (nodeSelector): the pods would never be scheduled; change nodeSelector (ask an administrator which labels and taints the nodes have)`,
	}, check(t, clustertest.Fake{Objects: tainted}, helloworld+"nodeSelector: {nvidia.com/gpu.product: b200}\n"))
	require.Equal(t, []string{
		`settings.yaml:1:1: tolerations: no node takes the job's pods: of the 3 nodes that offer 8 nvidia.com/gpu, 2 do not match the pods' node selector and affinity (nodeSelector), and 1 have the taint team=vision:NoSchedule, which the pods do not tolerate: the pods would never be scheduled; change tolerations (ask an administrator which labels and taints the nodes have)`,
	}, check(t, clustertest.Fake{Objects: tainted}, helloworld+"nodeSelector: {nvidia.com/gpu.product: a100}\n"))
	require.Equal(t, []string{
		`settings.yaml:1:1: tolerations: no node takes the job's pods: of the 3 nodes that offer 8 nvidia.com/gpu, 2 do not match the pods' node selector and affinity (nodeSelector), and 1 have the taint node.kubernetes.io/unschedulable:NoSchedule, which the pods do not tolerate: the pods would never be scheduled; change tolerations (ask an administrator which labels and taints the nodes have)`,
	}, check(t, clustertest.Fake{Objects: tainted}, helloworld+"nodeSelector: {nvidia.com/gpu.product: h100}\n"))
	tolerating := tainted + `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu}
spec: {tolerations: [{key: team, operator: Equal, value: vision, effect: NoSchedule}]}
`
	require.Empty(t, check(t, clustertest.Fake{Objects: tolerating}, helloworld+"nodeSelector: {nvidia.com/gpu.product: a100}\n"))
	// Without GPUs, a nodeSelector alone is checked too.
	cpuOnly := strings.Replace(helloworld, "numGpusPerPod: 8", "numGpusPerPod: 0", 1)
	require.Equal(t, []string{
		`settings.yaml:6:15: nodeSelector: no node takes the job's pods: of the cluster's 3 nodes, 3 do not match the pods' node selector and affinity (nodeSelector): the pods would never be scheduled; change nodeSelector (ask an administrator which labels and taints the nodes have)`,
	}, check(t, clustertest.Fake{Objects: tainted}, cpuOnly+"nodeSelector: {nvidia.com/gpu.product: b200}\n"))
}
