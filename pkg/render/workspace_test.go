package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/local"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/pkg/workspace"
)

// packed is a folder of one program, packed.
func packed(t *testing.T) *workspace.Packed {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "train.py"), []byte("print('hi')\n"), 0o644))
	p, err := workspace.Pack(dir)
	require.NoError(t, err)
	return p
}

// renderWith renders settings (YAML text) with a workspace.
func renderWith(t *testing.T, text string, ws *workspace.Packed) (*render.Result, error) {
	in, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: strings.NewReader(text)})
	require.NoError(t, err)
	return render.Render(in, nil, ws)
}

const workspaceSettings = `jobName: ws
numPods: 2
numGpusPerPod: 0
containerImage: example/train:1
mainProgram: train.py
`

// Every kind that runs a launch script unpacks the workspace in every pod
// (as its controller makes them), before the setup commands, from a
// projected volume of its ConfigMaps; a PyTorchTrainingJob that would run
// T9k's torchrun runs a script instead. The job's annotations say which
// workspace it is.
func TestEveryKindWithALaunchScriptUnpacksTheWorkspace(t *testing.T) {
	ws := packed(t)
	for _, kind := range []string{"PyTorchJob", "JobSet", "TrainJob", "PyTorchTrainingJob"} {
		t.Run(kind, func(t *testing.T) {
			extra := "jobKind: " + kind + "\nsetupCommands: [echo set up]\n"
			if kind == "TrainJob" {
				extra += "wrapper: none\npriority: null\n"
			}
			if kind == "PyTorchTrainingJob" {
				extra = "jobKind: " + kind + "\n" // T9k's torchrun mode, without a workspace
			}
			result, err := renderWith(t, workspaceSettings+extra, ws)
			require.NoError(t, err)
			require.Len(t, result.ConfigMaps, 1)
			job, err := cluster.NewJob(result.Manifest, "ml")
			require.NoError(t, err)
			annotations := job.Object.GetAnnotations()
			assert.Equal(t, ws.Digest, annotations["torchwrap.dev/workspace"])
			assert.Equal(t, "1", annotations["torchwrap.dev/workspace-files"])
			assert.Equal(t, ws.Folder, annotations["torchwrap.dev/workspace-folder"])
			assert.Equal(t, "1", annotations["torchwrap.dev/workspace-parts"])
			pods, err := local.Pods(job)
			require.NoError(t, err)
			require.Len(t, pods, 2)
			for _, pod := range pods {
				assert.Contains(t, pod.Pod.Spec.Volumes, corev1.Volume{Name: "torchwrap-workspace", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ws-workspace-0"}}}},
				}}})
				c := pod.Pod.Spec.Containers[0]
				assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "torchwrap-workspace", MountPath: "/tmp/torchwrap-workspace", ReadOnly: true})
				require.Equal(t, []string{"sh", "-c"}, c.Command[:2], "a launch script")
				lines := strings.Split(c.Command[2], "\n")
				assert.Equal(t, `cat /tmp/torchwrap-workspace/part-* | tar -xzf - || { echo "the workspace could not be unpacked into $PWD" >&2; exit 1; }`, lines[1])
				assert.Equal(t, `echo "Workspace `+ws.Digest[:19]+` (1 files) unpacked into the working folder"`, lines[2])
				if kind != "PyTorchTrainingJob" {
					assert.Equal(t, "echo set up", lines[3], "the setup commands after it")
				}
			}
		})
	}
}

func TestWorkspaceRefusals(t *testing.T) {
	ws := packed(t)
	for name, tc := range map[string]struct{ settings, want string }{
		"deepspeed": {"jobKind: DeepSpeedJob\n", "a DeepSpeedJob cannot take a workspace (--workspace)"},
		"t9k-elastic": {"jobKind: PyTorchTrainingJob\nelastic: {minPods: 1, maxPods: 2}\n",
			"an elastic PyTorchTrainingJob cannot take a workspace (--workspace)"},
		"mount-path": {"volumes: [{name: code, claimName: code, mountPath: /tmp/torchwrap-workspace}]\n",
			`volumes[0].mountPath: "/tmp/torchwrap-workspace" is already the mount path of the packed workspace (--workspace); choose another`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderWith(t, workspaceSettings+tc.settings, ws)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := renderWith(t, workspaceSettings+"jobKind: DeepSpeedJob\n", nil)
	require.NoError(t, err, "without a workspace, the same settings render")
}
