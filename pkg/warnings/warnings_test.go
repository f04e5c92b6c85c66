package warnings_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/warnings"
	"github.com/torchwrap/generator/schema"
)

// Each warning is a diagnostic of warning severity at the key it concerns;
// settings without risk give none. (The golden case warnings pins the texts.)
func TestWarningsAreWarningsAtTheirKeys(t *testing.T) {
	risky := map[string]any{
		"jobKind":                      "PyTorchJob",
		"environmentVariables":         []any{map[string]any{"name": "HF_TOKEN", "value": "hf_x"}, map[string]any{"name": "EPOCHS", "value": "3"}},
		"failureGracePeriodDuration":   "25h",
		"admissionGracePeriodDuration": "24h",
		"schedulerName":                "default-scheduler",
		"bypassCoscheduler":            true,
		"runPolicy":                    map[string]any{"cleanUpPolicy": "All"},
		"mainProgram":                  "torchrun train.py",
	}
	var paths []string
	for _, d := range warnings.Check(risky) {
		require.Equal(t, diag.Warning, d.Severity, d.Message)
		require.NotEmpty(t, d.Message)
		paths = append(paths, d.Path.String())
	}
	require.Equal(t, []string{
		"environmentVariables[0].value", "failureGracePeriodDuration", "schedulerName",
		"bypassCoscheduler", "runPolicy.cleanUpPolicy", "mainProgram",
	}, paths)

	require.Empty(t, warnings.Check(map[string]any{
		"jobKind": "PyTorchJob", "mainProgram": "train.py", "schedulerName": "sakkara",
		"environmentVariables": []any{map[string]any{"name": "HF_TOKEN", "secret": map[string]any{"name": "s", "key": "k"}}},
	}))
}

// A priority close to one of MLBatch's PriorityClasses may be a slip; any
// other is a cluster's own, and says nothing.
func TestPriorityNearMLBatchNames(t *testing.T) {
	for priority, warned := range map[string]bool{
		"high": true, "Low-Priority": true, "default-priorty": true,
		"high-priority": false, "default-priority": false, "t9k-high": false, "urgent": false,
	} {
		found := warnings.Check(map[string]any{"jobKind": "PyTorchJob", "priority": priority})
		if !warned {
			require.Empty(t, found, priority)
			continue
		}
		require.Len(t, found, 1, priority)
		require.Equal(t, "priority", found[0].Path.String())
		require.Contains(t, found[0].Message, "did you mean ", priority)
	}
	require.Empty(t, warnings.Check(map[string]any{"jobKind": "PyTorchJob", "priority": nil}))
}

// The names the warning knows are those the schema documents.
func TestMLBatchPriorityClassesAreTheSchemaExamples(t *testing.T) {
	model, err := schema.Model()
	require.NoError(t, err)
	var examples []string
	for _, raw := range model.Properties.Get("priority").Examples {
		var name string
		require.NoError(t, json.Unmarshal(raw, &name))
		examples = append(examples, name)
	}
	require.ElementsMatch(t, warnings.MLBatchPriorityClasses, examples)
}

// A size below 1Mi is valid, but surely a unit left out: the warning says the
// size in bytes and the size with a unit it most likely meant.
func TestMemoryBelowOneMi(t *testing.T) {
	found := warnings.Check(map[string]any{
		"jobKind":           "PyTorchTrainingJob",
		"totalMemoryPerPod": "16",
		"limitMemoryPerPod": "1Mi",
		"sharedMemorySize":  "512Ki",
		"mountNVMe":         map[string]any{"storage": "0"},
		"tensorboardSpec": map[string]any{"resources": map[string]any{
			"requests": map[string]any{"memory": "0.5"},
			"limits":   map[string]any{"memory": "64Gi", "cpu": "1"},
		}},
	})
	messages := map[string]string{}
	for _, d := range found {
		require.Equal(t, diag.Warning, d.Severity)
		messages[d.Path.String()] = d.Message
	}
	require.Equal(t, map[string]string{
		"totalMemoryPerPod":                         `"16" is 16 bytes, less than 1Mi; did you mean 16Gi?`,
		"sharedMemorySize":                          `"512Ki" is 524288 bytes, less than 1Mi; did you mean 512Mi?`,
		"mountNVMe.storage":                         `"0" is 0 bytes, less than 1Mi; write a size with a unit, such as 64Gi`,
		"tensorboardSpec.resources.requests.memory": `"0.5" is 0.5 bytes, less than 1Mi; did you mean 0.5Gi?`,
	}, messages)
}

// The warning looks at every size setting the schema has.
func TestMemoryKeysAreTheSchemas(t *testing.T) {
	model, err := schema.Model()
	require.NoError(t, err)
	var paths []string
	for _, k := range model.Keys() {
		path := diag.Path(strings.Split(strings.ReplaceAll(k.Path, "[]", ".0"), "."))
		if model.At(path).Resolved() == model.Definitions["memory"] {
			paths = append(paths, k.Path)
		}
	}
	var checked []string
	for _, p := range warnings.MemoryKeys {
		checked = append(checked, p.String())
	}
	require.ElementsMatch(t, paths, checked)
}

// What a T9k job runs as a list of words, without a shell, keeps $VAR and
// ${VAR} as written; the warning rewrites them as Kubernetes' $(VAR).
func TestShellVariablesWithoutAShell(t *testing.T) {
	check := func(values map[string]any) map[string]string {
		messages := map[string]string{}
		for _, d := range warnings.Check(values) {
			require.Equal(t, diag.Warning, d.Severity)
			messages[d.Path.String()] = d.Message
		}
		return messages
	}
	program := "train.py --out $OUT_DIR/run --lr=${LR} --seed $SEED"
	require.Equal(t, map[string]string{
		"mainProgram": "$OUT_DIR, ${LR} and $SEED stay as written: T9k's torchrun runs mainProgram without a shell; Kubernetes expands $(VAR) when the container's environment sets VAR (environmentVariables, envFrom): mainProgram: train.py --out $(OUT_DIR)/run --lr=$(LR) --seed $(SEED)",
	}, check(map[string]any{"jobKind": "PyTorchTrainingJob", "mainProgram": program}))

	// A shell runs it: in a PyTorchJob, and in a PyTorchTrainingJob with setupCommands.
	require.Empty(t, check(map[string]any{"jobKind": "PyTorchJob", "mainProgram": program}))
	require.Empty(t, check(map[string]any{"jobKind": "PyTorchTrainingJob", "mainProgram": program, "setupCommands": []any{"cd src"}}))

	// Read as a shell reads it: quoted or escaped, $ is literal there too;
	// between double quotes a shell expands it. $(VAR) is Kubernetes' own.
	require.Equal(t, map[string]string{
		"mainProgram": `$HERE stays as written: T9k's torchrun runs mainProgram without a shell; Kubernetes expands $(VAR) when the container's environment sets VAR (environmentVariables, envFrom): mainProgram: train.py '$LITERAL' \$ESCAPED "$(HERE)" $(ALREADY) $1 ${X:-y} $$`,
	}, check(map[string]any{"jobKind": "PyTorchTrainingJob", "mainProgram": `train.py '$LITERAL' \$ESCAPED "$HERE" $(ALREADY) $1 ${X:-y} $$`}))

	// Options go to torchrun as they are, in every kind.
	require.Equal(t, map[string]string{
		"torchrun.extraOptions[1]": "$LOGS stays as written: torchrun options are passed without a shell; Kubernetes expands $(VAR) when the container's environment sets VAR (environmentVariables, envFrom): --log-dir=$(LOGS)",
	}, check(map[string]any{"jobKind": "PyTorchJob", "torchrun": map[string]any{"extraOptions": []any{"--monitor-interval=5", "--log-dir=$LOGS"}}}))
}

// A DeepSpeedJob's launch (mainProgram as config.run, deepspeed.otherArgs) is
// data of the DeepSpeedJob, in no container's command or args: Kubernetes
// expands no variable there, $(VAR) included, and the warning says to read
// the variable in the program instead.
func TestVariablesInADeepSpeedJob(t *testing.T) {
	check := func(values map[string]any) map[string]string {
		messages := map[string]string{}
		for _, d := range warnings.Check(values) {
			messages[d.Path.String()] = d.Message
		}
		return messages
	}
	require.Equal(t, map[string]string{
		"mainProgram":            "Kubernetes does not expand $OUT_DIR, ${LR} and $(SEED): a DeepSpeedJob's mainProgram is its config.run, which the deepspeed launcher reads, and Kubernetes expands $(VAR) only in a container's command, args and env; read the variable in your program (os.environ in Python), or write its value",
		"deepspeed.otherArgs[1]": "Kubernetes does not expand $(PORT): deepspeed.otherArgs are the DeepSpeedJob's config.otherArgs, which the deepspeed launcher reads, and Kubernetes expands $(VAR) only in a container's command, args and env; write its value",
	}, check(map[string]any{"jobKind": "DeepSpeedJob", "mainProgram": "train.py --out $OUT_DIR/run --lr=${LR} --seed $(SEED) '$(QUOTED)'",
		"deepspeed": map[string]any{"otherArgs": []any{"--bind_cores_to_rank", "--master_port=$(PORT)"}}}))
	require.Empty(t, check(map[string]any{"jobKind": "DeepSpeedJob", "mainProgram": "train.py --data /data"}))
}

// The settings made for NVIDIA's GPUs are warned of in a job of another
// accelerator, but the NCCL variables where its library reads them (AMD's
// RCCL); several pods on MIG slices are warned of NCCL.
func TestSettingsForNVIDIAInAJobOfAnotherAccelerator(t *testing.T) {
	nvidiaOnly := map[string]any{
		"jobKind": "PyTorchJob", "numPods": float64(2), "autopilotHealthChecks": []any{"pciebw"},
		"topologyFileConfigMap": "nvidia-topo-gdr", "ncclGdrEnvConfigMap": "nccl-netwk-env-vars",
	}
	for resource, want := range map[string][]string{
		"nvidia.com/gpu":         nil,
		"nvidia.com/mig-1g.10gb": {"gpuResName"},
		"amd.com/gpu":            {"autopilotHealthChecks", "topologyFileConfigMap"},
		"habana.ai/gaudi":        {"autopilotHealthChecks", "topologyFileConfigMap", "ncclGdrEnvConfigMap"},
		"huawei.com/Ascend910":   {"autopilotHealthChecks", "topologyFileConfigMap", "ncclGdrEnvConfigMap"},
		"example.com/npu":        {"autopilotHealthChecks", "topologyFileConfigMap"},
	} {
		values := map[string]any{"gpuResName": resource}
		for k, v := range nvidiaOnly {
			values[k] = v
		}
		var paths []string
		for _, d := range warnings.Check(values) {
			paths = append(paths, d.Path.String())
			if d.Path.String() != "gpuResName" {
				require.Contains(t, d.Message, resource)
			}
		}
		require.Equal(t, want, paths, resource)
	}
}

// podSecurity: restricted runs the containers as a user other than root:
// without securityContext.runAsUser, an image that runs as root would not
// start, which a warning says; with one, nothing is said.
func TestRestrictedWithoutAUser(t *testing.T) {
	found := warnings.Check(map[string]any{"jobKind": "PyTorchJob", "podSecurity": "restricted"})
	require.Len(t, found, 1)
	require.Equal(t, "podSecurity", found[0].Path.String())
	require.Contains(t, found[0].Message, "set securityContext.runAsUser")
	require.Empty(t, warnings.Check(map[string]any{"jobKind": "PyTorchJob", "podSecurity": "restricted", "securityContext": map[string]any{"runAsUser": 1000.0}}))
	require.Empty(t, warnings.Check(map[string]any{"jobKind": "PyTorchJob", "podSecurity": "baseline"}))
}
