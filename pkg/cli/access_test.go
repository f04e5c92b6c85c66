package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// access answers for each command: YES with every right, NO with none,
// naming the rights lacking, as kubectl auth can-i takes them.
func TestAccess(t *testing.T) {
	connectToFake(t, clustertest.Fake{})
	out, errOut, code := generator("access")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "in namespace ml on the cluster at https://fake, for AppWrapper wrapping PyTorchJob:\n", errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Regexp(t, `^COMMAND +MAY +LACKS$`, lines[0])
	for _, line := range lines[1:] {
		require.Regexp(t, `^[a-z].* YES$`, line)
	}

	connectToFake(t, clustertest.Fake{Denied: true})
	out, errOut, code = generator("access", "-n", "team-a", "--job-kind", "JobSet", "--wrapper", "none")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "in namespace team-a on the cluster at https://fake, for JobSet:\n", errOut)
	require.Regexp(t, `(?m)^stop, resume +NO +get jobsets.jobset.x-k8s.io in namespace team-a, list workloads.kueue.x-k8s.io in namespace team-a, patch workloads.kueue.x-k8s.io in namespace team-a, patch jobsets.jobset.x-k8s.io in namespace team-a, get appwrappers`, out)
	require.Regexp(t, `(?m)^list -A +PART +list appwrappers.workload.codeflare.dev in all namespaces, `, out)
}
