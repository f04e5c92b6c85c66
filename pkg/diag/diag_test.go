package diag

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPathRoundTrip(t *testing.T) {
	for _, s := range []string{"jobName", "environmentVariables[2].name", "a.b[0][1].c", "sshGitCloneConfig.secretName",
		`nodeSelector["nvidia.com/gpu.product"]`, `podLabels["a[b"].c`, `x["say \"hi\""][0]`} {
		require.Equal(t, s, ParsePath(s).String())
	}
	require.Equal(t, Path{"volumes", "3", "mountPath"}, ParsePath("volumes[3].mountPath"))
	require.Equal(t, Path{"podAnnotations", "k8s.v1.cni.cncf.io/networks"}, ParsePath(`podAnnotations["k8s.v1.cni.cncf.io/networks"]`))
	require.Equal(t, Path{"podLabels", "team"}, ParsePath("podLabels.team"))
}
