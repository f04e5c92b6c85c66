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

func TestStringNamesTheSeverity(t *testing.T) {
	d := Diagnostic{Path: Path{"queueName"}, Message: "no LocalQueue", Source: "s.yaml", Line: 3, Column: 12}
	require.Equal(t, "s.yaml:3:12: queueName: no LocalQueue", d.String())
	d.Severity = Warning
	require.Equal(t, "s.yaml:3:12: warning: queueName: no LocalQueue", d.String())
	d.Severity = Unchecked
	require.Equal(t, "s.yaml:3:12: could not check: queueName: no LocalQueue", d.String())
}
