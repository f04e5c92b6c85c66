package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/torchwrap/generator/pkg/cluster/clustertest"
)

// profileConfigMap is the ConfigMap of a profile in a namespace, with the
// profile's text (lines indented by four spaces in it).
func profileConfigMap(namespace, text string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: torchwrap-profile, namespace: " + namespace + "}\ndata:\n  profile.yaml: |\n" +
		"    " + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n    ") + "\n"
}

// The profiles of a fake cluster: the cluster's (a rule) and namespace ml's
// (a default, and the queue imposed).
var (
	clusterProfileMap = profileConfigMap("kube-public", `apiVersion: torchwrap.dev/v1alpha1
kind: Profile
description: lab
rules:
  - key: numGpusPerPod
    schema: {maximum: 8}
    message: eight GPUs a node`)
	namespaceProfile = profileConfigMap("ml", `apiVersion: torchwrap.dev/v1alpha1
kind: Profile
description: team
defaults:
  numGpusPerPod: 4
imposed:
  - key: queueName
    value: research
    message: the team's queue`)
)

// writeSettings writes a settings file in a folder of the test, which it
// changes to, so that messages name it settings.yaml.
func writeSettings(t *testing.T, text string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte(text), 0o644))
	t.Chdir(dir)
}

// check and submit read the cluster's profile, refined by the namespace's,
// say it in one line, render the settings over it, and refuse what goes
// against it at the settings' lines, with the ConfigMap's line; nothing is
// asked of the cluster but the two ConfigMaps then.
func TestCheckAppliesTheClusterProfile(t *testing.T) {
	dyn := connectToFake(t, clustertest.Fake{Objects: clusterProfileMap + "---\n" + namespaceProfile})
	writeSettings(t, "jobName: j\ncontainerImage: busybox\nnumPods: 2\n")
	out, errOut, code := generator("check", "-f", "settings.yaml")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "OK: AppWrapper ml/j can run on this cluster\n", out)
	require.Equal(t, "profile: ConfigMap kube-public/torchwrap-profile (lab), refined by ConfigMap ml/torchwrap-profile (team)\n", errOut)

	dyn.ClearActions()
	writeSettings(t, "jobName: j\ncontainerImage: busybox\nnumPods: 2\nnumGpusPerPod: 16\nqueueName: default-queue\n")
	_, errOut, code = generator("submit", "-f", "settings.yaml")
	require.Equal(t, ExitInvalid, code)
	require.Equal(t, `profile: ConfigMap kube-public/torchwrap-profile (lab), refined by ConfigMap ml/torchwrap-profile (team)
settings.yaml:4:16: numGpusPerPod: 16 breaks a rule of the profile (at most 8; ConfigMap kube-public/torchwrap-profile:5): eight GPUs a node
settings.yaml:5:12: queueName: "default-queue" goes against the profile, which imposes "research" (ConfigMap ml/torchwrap-profile:7): the team's queue; leave queueName out of your settings, the profile sets it
2 problems in the settings; nothing was submitted
`, errOut)
	var asked []string
	for _, a := range dyn.Actions() {
		asked = append(asked, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
	}
	require.ElementsMatch(t, []string{"get configmaps kube-public", "get configmaps ml"}, asked)
}

// A profile that cannot be read is said, with what was applied instead; one
// that is not valid stops the command, at the ConfigMap's lines.
func TestAClusterProfileThatCannotBeApplied(t *testing.T) {
	connectToFake(t, clustertest.Fake{Objects: namespaceProfile, React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "kube-public" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "torchwrap-profile", nil)
		})
	}})
	writeSettings(t, "jobName: j\ncontainerImage: busybox\nnumPods: 2\n")
	_, errOut, code := generator("check", "-f", "settings.yaml")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, `profile: ConfigMap ml/torchwrap-profile (team)
could not check ConfigMap kube-public/torchwrap-profile (a profile), as your role does not allow it (RBAC); the right that would: get configmaps torchwrap-profile in namespace kube-public (generator access tells each command's)
`, errOut)
	// submit says nothing of it: it would at every run.
	_, errOut, _ = generator("submit", "-f", "settings.yaml")
	require.True(t, strings.HasPrefix(errOut, "profile: ConfigMap ml/torchwrap-profile (team)\n"), errOut)
	require.NotContains(t, errOut, "RBAC")
	// profile get does not say that what it could not read is not there.
	_, errOut, code = generator("profile", "get")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "warning: profile: whether ConfigMap kube-public/torchwrap-profile holds a profile is not known: your role does not let you read it (RBAC; the right that would: get configmaps torchwrap-profile in namespace kube-public); applied ConfigMap ml/torchwrap-profile (team) alone\n", errOut)

	// Nor does it when there is none it may read.
	connectToFake(t, clustertest.Fake{React: func(dyn *dynamicfake.FakeDynamicClient) {
		dyn.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "kube-public" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "torchwrap-profile", nil)
		})
	}})
	_, errOut, code = generator("profile", "get")
	require.Equal(t, ExitInvalid, code)
	require.Equal(t, "Error: the cluster at https://fake has no profile for namespace ml that you may read: no ConfigMap ml/torchwrap-profile; whether ConfigMap kube-public/torchwrap-profile holds a profile is not known: your role does not let you read it (RBAC; the right that would: get configmaps torchwrap-profile in namespace kube-public)\n", errOut)

	connectToFake(t, clustertest.Fake{Objects: profileConfigMap("ml", "apiVersion: torchwrap.dev/v1alpha1\nkind: Profile\ndefaults:\n  numGpuPerPod: 4\n")})
	_, errOut, code = generator("check", "-f", "settings.yaml")
	require.Equal(t, ExitInvalid, code)
	require.Equal(t, `profile: ConfigMap ml/torchwrap-profile
ConfigMap ml/torchwrap-profile:4:3: numGpuPerPod: unknown key; did you mean numGpusPerPod?
1 problem in the profile, which whoever keeps it must fix (generator profile validate checks it); nothing was checked against the cluster
`, errOut)
}

// init starts from the cluster's profile: its values as comments, what it
// says of each key above it; profile get saves it as one file.
func TestInitAndGetTheClusterProfile(t *testing.T) {
	connectToFake(t, clustertest.Fake{Objects: clusterProfileMap + "---\n" + namespaceProfile})
	out, errOut, code := generator("init", "-")
	require.Equal(t, ExitOK, code, errOut)
	require.True(t, strings.HasPrefix(errOut, "profile: ConfigMap kube-public/torchwrap-profile (lab), refined by ConfigMap ml/torchwrap-profile (team); the starter gives its values, in comments\n"), errOut)
	require.Contains(t, out, "\n# The profile on queueName: imposed \"research\", which no one may change\n#   (ConfigMap ml/torchwrap-profile:7): the team's queue\n# queueName: research\n")
	require.Contains(t, out, "\n# numGpusPerPod: 4\n")

	out, errOut, code = generator("profile", "get")
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, `# The profile of namespace ml on the cluster at https://fake: ConfigMap kube-public/torchwrap-profile (lab), refined by ConfigMap ml/torchwrap-profile (team).
# Written by generator profile get; use it with --profile.
apiVersion: torchwrap.dev/v1alpha1
kind: Profile
description: lab; team
defaults:
  numGpusPerPod: 4
imposed:
- key: queueName
  message: the team's queue
  value: research
rules:
- key: numGpusPerPod
  message: eight GPUs a node
  schema:
    maximum: 8
`, out)

	connectToFake(t, clustertest.Fake{})
	_, errOut, code = generator("profile", "get", "-n", "ml")
	require.Equal(t, ExitInvalid, code)
	require.Equal(t, "Error: the cluster at https://fake has no profile for namespace ml: no ConfigMap kube-public/torchwrap-profile nor ConfigMap ml/torchwrap-profile\n", errOut)
}
