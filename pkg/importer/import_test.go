package importer_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/pkg/importer"
	"github.com/torchwrap/generator/testdata/cases"
)

// settingsOf imports a job file of one job and reads the settings written.
func settingsOf(t *testing.T, file string) (map[string]any, *importer.Result) {
	t.Helper()
	res := importOne(t, "job.yaml", []byte(file))
	var values map[string]any
	require.NoError(t, sigsyaml.Unmarshal(res.Settings, &values))
	return values, res
}

// pytorchJob is a PyTorchJob of two pods whose container runs command.
func pytorchJob(command string) string {
	replica := `      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
            command: ` + command + `
            resources:
              limits:
                nvidia.com/gpu: 4
`
	return `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: launch
spec:
  pytorchReplicaSpecs:
    Master:
` + replica + `    Worker:
` + replica
}

// A hand-written launch is read back into setup commands, torchrun's
// settings and the program, however torchrun and its options are spelled.
func TestLaunchesAreReadBack(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		want          map[string]any // the launch's settings; nil: absent
	}{{
		name:    "torchrun, options with dashes and spaces",
		command: `["torchrun", "--nproc-per-node", "8", "--max-restarts=3", "--monitor-interval", "5", "train.py", "--lr", "0.1"]`,
		want: map[string]any{"mainProgram": "train.py --lr 0.1",
			"torchrun": map[string]any{"maxRestarts": 3.0, "nprocPerNode": 8.0, "extraOptions": []any{"--monitor-interval=5"}}},
	}, {
		name:    "python -m torch.distributed.run, one process per GPU",
		command: `["python3", "-m", "torch.distributed.run", "--nproc_per_node=4", "--rdzv_backend", "c10d", "train.py"]`,
		want:    map[string]any{"mainProgram": "train.py", "torchrun": map[string]any{"rdzvBackend": "c10d"}},
	}, {
		name: "a shell script: setup, then torchrun with the operator's variables",
		command: `["sh", "-c", "pip install -r requirements.txt\ncd /workspace/app\n` +
			`torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT \\\n  --nproc_per_node 4 train.py --epochs 3"]`,
		want: map[string]any{"setupCommands": []any{"pip install -r requirements.txt", "cd /workspace/app"}, "mainProgram": "train.py --epochs 3"},
	}, {
		name:    "a module",
		command: `["torchrun", "--nproc_per_node=4", "-m", "mypkg.train", "--config", "a b.yaml"]`,
		want:    map[string]any{"mainProgram": "-m mypkg.train --config 'a b.yaml'"},
	}, {
		name:    "no torchrun: the program runs as a setup command",
		command: `["python", "/opt/mnist.py", "--epochs=1"]`,
		want:    map[string]any{"setupCommands": []any{"python /opt/mnist.py --epochs=1"}},
	}, {
		name:    "a script that goes on after torchrun is carried whole",
		command: `["bash", "-c", "torchrun --nproc_per_node=4 train.py\naws s3 cp out s3://bucket/"]`,
		want:    map[string]any{"setupCommands": []any{"torchrun --nproc_per_node=4 train.py", "aws s3 cp out s3://bucket/"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			values, res := settingsOf(t, pytorchJob(tc.command))
			for _, key := range []string{"setupCommands", "mainProgram", "torchrun"} {
				assert.Equal(t, tc.want[key], values[key], key)
			}
			assert.Equal(t, 4.0, values["numGpusPerPod"])
			// What differs is the launch, and it is named with its line.
			require.Len(t, res.Lost, 2, "%v", res.Lost)
			assert.Equal(t, "job.yaml:15", res.Lost[0].Where)
			assert.Contains(t, res.Lost[0].Reason, "the launch is the generator's script")
		})
	}
}

// T9k's older spellings (enable, torchrunConfig.minNodes) are read as the
// newer ones, and rendered in the newer.
func TestOlderT9kSpellings(t *testing.T) {
	values, res := settingsOf(t, `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: old-spelling
spec:
  torchrunConfig:
    enable: true
    procPerNode: "2"
    minNodes: 1
  runMode:
    debug:
      enable: false
  replicaSpecs:
  - type: node
    replicas: 3
    restartPolicy: ExitCode
    template:
      spec:
        containers:
        - name: pytorch
          image: t9kpublic/pytorch-1.13.0:sdk-0.5.2
          command: [python]
          args: [train.py, --epochs, "3"]
`)
	assert.Equal(t, "train.py --epochs 3", values["mainProgram"])
	assert.Equal(t, map[string]any{"nprocPerNode": 2.0}, values["torchrun"])
	assert.Equal(t, map[string]any{"minPods": 1.0, "maxPods": 3.0}, values["elastic"])
	assert.Equal(t, map[string]any{"debug": map[string]any{"enabled": false}}, values["runMode"])
	assert.Equal(t, 3.0, values["numPods"])
	assert.Equal(t, true, dig(res.Rendered, "spec", "torchrunConfig", "enabled"))
	assert.Equal(t, false, dig(res.Rendered, "spec", "runMode", "debug", "enabled"))
	// The older fields are named, and T9k's node replicas become a master and
	// workers: each is said.
	lost := paths(res.Lost)
	for _, p := range []string{"spec.torchrunConfig.enable", "spec.torchrunConfig.minNodes", "spec.runMode.debug.enable", "spec.replicaSpecs[0].type"} {
		assert.Contains(t, lost, p)
	}
}

// MCAD's AppWrapper (mcad.ibm.com/v1beta1, later workload.codeflare.dev/v1beta1;
// spec.resources.GenericItems) is read, and what
// v1beta2 has no place for is listed.
func TestOlderAppWrapper(t *testing.T) {
	values, res := settingsOf(t, `apiVersion: mcad.ibm.com/v1beta1
kind: AppWrapper
metadata:
  name: old-aw
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  schedulingSpec:
    minAvailable: 2
  resources:
    GenericItems:
    - replicas: 1
      generictemplate:
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata:
          name: old-aw
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              restartPolicy: Never
              template:
                spec:
                  containers:
                  - name: pytorch
                    image: busybox:1.36
                    command: [sh, -c, "echo hi"]
`)
	assert.Equal(t, "team-a", values["queueName"])
	assert.Equal(t, []any{"echo hi"}, values["setupCommands"])
	assert.Equal(t, "workload.codeflare.dev/v1beta2", res.Rendered["apiVersion"])
	lost := paths(res.Lost)
	assert.Contains(t, lost, "apiVersion")
	assert.Contains(t, lost, "spec.schedulingSpec.minAvailable")
	assert.Contains(t, lost, "spec.resources.GenericItems") // its item's fields but the job
	for _, d := range res.Lost {
		assert.NotEmpty(t, d.Reason, d.Path.String())
	}
}

// Input that is no job says so in one line, at its line.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"not YAML", "apiVersion: v1\nkind: [oops\n", "x.yaml:1: not YAML: did not find expected ',' or ']'"},
		{"no document", "# only a comment\n", "x.yaml:1: no object: the file holds no YAML document; give a file with a job in it"},
		{"a list", "- a\n- b\n", "x.yaml:1: not a Kubernetes object: the document is a list, not a mapping with apiVersion and kind"},
		{"no kind", "apiVersion: v1\nmetadata: {}\n", "x.yaml:1: not a Kubernetes object: it has no kind; a job file starts with apiVersion and kind"},
		{"a List", "apiVersion: v1\nkind: List\nitems: []\n", "x.yaml:1: a List (as kubectl get -o yaml writes for many objects): import its items instead, one YAML document each, separated by ---"},
		{"two kinds", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nkind: JobSet\n", `x.yaml:3: not a valid object: mapping key "kind" already defined at line 2; keep one of the two`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importer.Read("x.yaml", []byte(tc.file))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	for _, tc := range []struct{ name, file, want string }{
		{"a kind of another group", "apiVersion: example.com/v1\nkind: PyTorchJob\nmetadata: {name: x}\nspec: {}\n",
			"x.yaml:1: a PyTorchJob of example.com/v1 is not the PyTorchJob the generator makes (kubeflow.org): check apiVersion"},
		{"a workload of another kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template: {}\n",
			"x.yaml:2: a Deployment (apps/v1) is not a job the generator makes: import reads a PyTorchJob, JobSet, TrainJob, PyTorchTrainingJob, DeepSpeedJob, or an AppWrapper of one"},
		{"a JobSet of two roles", "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: x}\nspec:\n  replicatedJobs:\n  - name: a\n  - name: b\n",
			"x.yaml:5: a JobSet of 2 replicated jobs: settings make one replicated job of identical pods (node); a JobSet of different roles cannot be imported"},
		{"an AppWrapper of no job", "apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: x}\nspec:\n  components: []\n",
			"x.yaml:5: an AppWrapper with no job in it: import reads an AppWrapper of a PyTorchJob, JobSet, PyTorchTrainingJob or DeepSpeedJob"},
		{"no name", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      template:\n        spec:\n          containers:\n          - {name: pytorch, image: busybox}\n",
			"x.yaml:1: a PyTorchJob cannot be expressed as settings: jobName: required but not set; add it, for example jobName: my-job"},
		{"no image", "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x}\nspec:\n  runtimeRef: {name: torch-distributed}\n",
			"x.yaml:1: a TrainJob whose training container names no image (it runs its image's or its runtime's): settings need the image (containerImage); add it to the job and import it again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects, err := importer.Read("x.yaml", []byte(tc.file))
			require.NoError(t, err)
			_, err = importer.Import(objects[0])
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	// An object that holds no pods is no job: nothing to import, no error.
	objects, err := importer.Read("x.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	require.NoError(t, err)
	res, err := importer.Import(objects[0])
	assert.NoError(t, err)
	assert.Nil(t, res)
}

func paths(d []importer.Difference) []string {
	var out []string
	for _, x := range d {
		out = append(out, x.Path.String())
	}
	return out
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// Another vendor's accelerator becomes gpuResName, an RDMA device the RoCE
// GDR settings, and any other extended resource is listed, not carried.
func TestAcceleratorsAreCarried(t *testing.T) {
	// A real T9k job on Hygon DCUs (github.com/t9k/examples).
	dcu, err := os.ReadFile(cases.Path(t, "testdata", "t9k-examples", "t9k-examples__dcu-yolov5-job-2x4xdp.yaml"))
	require.NoError(t, err)
	values, res := settingsOf(t, string(dcu))
	assert.Equal(t, "hygon.com/dcu", values["gpuResName"])
	assert.Equal(t, float64(4), values["numGpusPerPod"])
	assert.NotContains(t, values, "roceGdrResName")
	for _, lost := range paths(res.Lost) {
		assert.NotContains(t, lost, "resources", "render gives back the job's requests and limits")
	}

	job := strings.ReplaceAll(pytorchJob("[torchrun, train.py]"), "nvidia.com/gpu: 4", "amd.com/gpu: 8\n                rdma/rdma_shared_device_a: 1\n                example.com/fpga: 1")
	values, res = settingsOf(t, job)
	assert.Equal(t, "amd.com/gpu", values["gpuResName"])
	assert.Equal(t, float64(8), values["numGpusPerPod"])
	assert.Equal(t, "rdma/rdma_shared_device_a", values["roceGdrResName"])
	assert.Equal(t, float64(1), values["numRoceGdr"])
	assert.Contains(t, paths(res.Lost), `spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.limits["example.com/fpga"]`)
}
