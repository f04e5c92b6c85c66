// Package warnings gives advice on settings that are valid but risky: a
// credential in plain text, a grace period AppWrapper will cut short, a
// scheduler that fragments GPUs. The manifest is rendered all the same, unless
// the user asks for --strict.
package warnings

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/torchwrap/generator/pkg/accelerator"
	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/schema"
)

// gracePeriods are the AppWrapper durations its controller caps at its
// grace-period maximum, 24h unless the cluster changed it.
var gracePeriods = []string{
	"admissionGracePeriodDuration", "warmupGracePeriodDuration", "failureGracePeriodDuration",
	"retryPausePeriodDuration", "forcefulDeletionGracePeriodDuration", "deletionOnFailureGracePeriodDuration",
}

// credentialWord matches the words of a variable name that say it holds a
// credential: HF_TOKEN, WANDB_API_KEY, DB_PASSWORD.
var credentialWord = regexp.MustCompile(`^(TOKEN|PASSWORD|PASSWD|SECRET|KEY|APIKEY|CREDENTIAL|CREDENTIALS)$`)

// memoryKeys are the settings that hold a size in bytes (the schema's memory
// definition).
var memoryKeys = []diag.Path{
	{"totalMemoryPerPod"}, {"limitMemoryPerPod"}, {"sharedMemorySize"}, {"mountNVMe", "storage"},
	{"tensorboardSpec", "resources", "requests", "memory"}, {"tensorboardSpec", "resources", "limits", "memory"},
}

// memoryFloor is schema.MemoryFloor as a quantity.
var memoryFloor = resource.NewQuantity(schema.MemoryFloor, resource.BinarySI)

// mlbatchPriorityClasses are the PriorityClasses of an MLBatch cluster, the
// names the schema documents for priority.
var mlbatchPriorityClasses = []string{"default-priority", "low-priority", "high-priority"}

// Check returns the warnings about values, which must have passed validation.
func Check(values map[string]any) []diag.Diagnostic {
	var found []diag.Diagnostic
	warn := func(path diag.Path, message string) {
		found = append(found, diag.Diagnostic{Severity: diag.Warning, Path: path, Message: message})
	}
	env, _ := values["environmentVariables"].([]any)
	for i, e := range env {
		v, _ := e.(map[string]any)
		name, _ := v["name"].(string)
		if value, literal := v["value"]; literal && value != "" && looksLikeCredential(name) {
			warn(diag.Path{"environmentVariables", strconv.Itoa(i), "value"}, fmt.Sprintf("%s looks like a credential, written here in plain text, where anyone who can read the AppWrapper can read it; put it in a Secret and use secret: {name, key} instead of value", name))
		}
	}
	for _, key := range gracePeriods {
		s, _ := values[key].(string)
		if d, err := time.ParseDuration(s); err == nil && d > 24*time.Hour {
			warn(diag.Path{key}, fmt.Sprintf("%s is longer than 24h, the longest grace period AppWrapper allows unless your cluster raised it: the controller will use 24h", s))
		}
	}
	for _, path := range memoryKeys {
		s, _ := at(values, path).(string)
		if q, err := resource.ParseQuantity(s); err == nil && q.Cmp(*memoryFloor) < 0 {
			fix := "write a size with a unit, such as 64Gi"
			if guess := schema.MemoryGuess(s); guess != "" {
				fix = "did you mean " + guess + "?"
			}
			warn(path, fmt.Sprintf("%q is %s bytes, less than %s; %s", s, strconv.FormatFloat(q.AsApproximateFloat64(), 'f', -1, 64), memoryFloor, fix))
		}
	}
	if p, _ := values["priority"].(string); !slices.Contains(mlbatchPriorityClasses, p) {
		if guess := schema.Closest(p, mlbatchPriorityClasses, mlbatchPriorityClasses); guess != "" {
			warn(diag.Path{"priority"}, fmt.Sprintf("%s names no MLBatch PriorityClass; did you mean %s? Keep %s only if your cluster has a PriorityClass of that name", p, guess, p))
		}
	}
	if values["schedulerName"] == "default-scheduler" {
		warn(diag.Path{"schedulerName"}, "default-scheduler places pods one by one and can leave GPUs fragmented across nodes; use it only when your administrator asks you to")
	}
	if values["bypassCoscheduler"] == true {
		warn(diag.Path{"bypassCoscheduler"}, "means default-scheduler, which places pods one by one and can leave GPUs fragmented across nodes; use it only when your administrator asks you to")
	}
	if values["podSecurity"] == "restricted" && at(values, diag.Path{"securityContext", "runAsUser"}) == nil {
		warn(diag.Path{"podSecurity"}, "restricted sets runAsNonRoot: true, and the kubelet starts no container whose image runs as root, as most PyTorch images do (the pod stays in CreateContainerConfigError); set securityContext.runAsUser to a user of the image other than root, unless its USER is one")
	}
	if policy, _ := values["runPolicy"].(map[string]any); policy["cleanUpPolicy"] == "All" || policy["cleanUpPolicy"] == "Unfinished" {
		warn(diag.Path{"runPolicy", "cleanUpPolicy"}, fmt.Sprintf("%s makes T9k delete pods that the AppWrapper counts to judge the job's health, and it may take a finished job for a failed one; None keeps them", policy["cleanUpPolicy"]))
	}
	program, _ := values["mainProgram"].(string)
	if values["jobKind"] == "DeepSpeedJob" {
		// The launch is data of the DeepSpeedJob, outside every container:
		// Kubernetes expands no variable there, not even $(VAR).
		if vars, _ := unexpanded(program, true, anyVariable); len(vars) > 0 {
			warn(diag.Path{"mainProgram"}, notExpanded(vars, "a DeepSpeedJob's mainProgram is its config.run", "read the variable in your program (os.environ in Python), or write its value"))
		}
		args, _ := at(values, diag.Path{"deepspeed", "otherArgs"}).([]any)
		for i, arg := range args {
			text, _ := arg.(string)
			if vars, _ := unexpanded(text, false, anyVariable); len(vars) > 0 {
				warn(diag.Path{"deepspeed", "otherArgs", strconv.Itoa(i)}, notExpanded(vars, "deepspeed.otherArgs are the DeepSpeedJob's config.otherArgs", "write its value"))
			}
		}
	} else if reason := withoutShell(values); reason != "" {
		if vars, fixed := unexpanded(program, true, shellVariable); len(vars) > 0 {
			warn(diag.Path{"mainProgram"}, kubernetesVariables(vars, reason, "mainProgram: "+fixed))
		}
	}
	options, _ := at(values, diag.Path{"torchrun", "extraOptions"}).([]any)
	for i, option := range options {
		text, _ := option.(string)
		if vars, fixed := unexpanded(text, false, shellVariable); len(vars) > 0 {
			warn(diag.Path{"torchrun", "extraOptions", strconv.Itoa(i)}, kubernetesVariables(vars, "torchrun options are passed without a shell", fixed))
		}
	}
	accelerators(values, warn)
	if first := firstWord(values["mainProgram"]); first != "" && !(values["jobKind"] == "DeepSpeedJob" && launch(values) == "exec") {
		switch first {
		case "torchrun", "deepspeed":
			warn(diag.Path{"mainProgram"}, fmt.Sprintf("starts with %s, but the job launches mainProgram itself; give only your program and its arguments", first))
		case "python", "python3":
			warn(diag.Path{"mainProgram"}, fmt.Sprintf("starts with %s, but mainProgram is already run with python; give only your script (or -m module) and its arguments", first))
		}
	}
	return found
}

// accelerators warns of the settings made for NVIDIA's GPUs in a job of
// another accelerator, and of NCCL across MIG slices.
func accelerators(values map[string]any, warn func(diag.Path, string)) {
	name, _ := values["gpuResName"].(string)
	vendor, known := accelerator.Of(name)
	if pods, _ := values["numPods"].(float64); vendor.Name == "NVIDIA MIG slice" && pods > 1 {
		warn(diag.Path{"gpuResName"}, "NCCL does not support MIG slices (github.com/NVIDIA/nccl/issues/1716): pods on slices may fail to meet with the nccl backend; use the gloo backend, or whole GPUs (nvidia.com/gpu)")
	}
	if accelerator.IsNVIDIA(name) {
		return
	}
	what := name
	if known {
		what = vendor.Name + "s (" + name + ")"
	}
	if checks, _ := values["autopilotHealthChecks"].([]any); len(checks) > 0 {
		warn(diag.Path{"autopilotHealthChecks"}, fmt.Sprintf("IBM Autopilot runs its health checks on NVIDIA's GPU nodes only, not beside %s: these checks never run; remove autopilotHealthChecks", what))
	}
	if cm, _ := values["topologyFileConfigMap"].(string); cm != "" {
		warn(diag.Path{"topologyFileConfigMap"}, fmt.Sprintf("is the topology file of nvidia-topologyd, a map of NVIDIA's GPUs and NICs for NCCL, given to a job of %s; remove it unless your administrator made this one for them", what))
	}
	if cm, _ := values["ncclGdrEnvConfigMap"].(string); cm != "" && known && !vendor.NCCL {
		warn(diag.Path{"ncclGdrEnvConfigMap"}, fmt.Sprintf("holds NCCL's variables, which %s, the collective library of %s, does not read; remove it, and set that library's own variables with environmentVariables", vendor.Collective, what))
	}
}

// withoutShell says why mainProgram runs without a shell, as the container's
// arguments: in a PyTorchTrainingJob in T9k's torchrun mode (without
// setupCommands), as the chart's torchwrap.wordsOfMainProgram decides; "" when
// a shell runs it (a DeepSpeedJob's is no container's: see Check).
func withoutShell(values map[string]any) string {
	setup, _ := values["setupCommands"].([]any)
	if values["jobKind"] == "PyTorchTrainingJob" && len(setup) == 0 {
		return "T9k's torchrun runs mainProgram without a shell"
	}
	return ""
}

// shellVariable is what a shell expands and Kubernetes does not, at the start
// of the text: $NAME and ${NAME}. anyVariable is those and Kubernetes'
// $(NAME) too.
var (
	shellVariable = regexp.MustCompile(`^\$(?:(` + variableName + `)|\{(` + variableName + `)\})`)
	anyVariable   = regexp.MustCompile(`^\$(?:(` + variableName + `)|\{(` + variableName + `)\}|\((` + variableName + `)\))`)
)

// variableName is the name of an environment variable in $NAME, ${NAME} and
// $(NAME).
const variableName = `[A-Za-z_][A-Za-z0-9_]*`

// unexpanded finds the variables of text that pattern matches, each once, and
// gives text with each written as Kubernetes' $(NAME). With shell, text is
// read as a shell reads it: $ is literal between single quotes and after a
// backslash.
func unexpanded(text string, shell bool, pattern *regexp.Regexp) (vars []string, fixed string) {
	var b strings.Builder
	single, double := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case shell && single:
			single = c != '\''
		case shell && c == '\\' && i+1 < len(text):
			b.WriteByte(c)
			i++
			c = text[i]
		case shell && c == '\'' && !double:
			single = true
		case shell && c == '"':
			double = !double
		case c == '$':
			if m := pattern.FindStringSubmatch(text[i:]); m != nil {
				if !slices.Contains(vars, m[0]) {
					vars = append(vars, m[0])
				}
				b.WriteString("$(" + strings.Join(m[1:], "") + ")")
				i += len(m[0]) - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return vars, b.String()
}

// kubernetesVariables is the warning about shell variables that stay as
// written, and why, with the text rewritten.
func kubernetesVariables(vars []string, reason, fixed string) string {
	verb := "stays"
	if len(vars) > 1 {
		verb = "stay"
	}
	return fmt.Sprintf("%s %s as written: %s; Kubernetes expands $(VAR) when the container's environment sets VAR (environmentVariables, envFrom): %s", schema.AndList(vars), verb, reason, fixed)
}

// notExpanded says that vars reach a DeepSpeedJob's launch as written: what
// holds them is data of the DeepSpeedJob, which T9k's controller and the
// deepspeed launcher read, and no container's command or args.
func notExpanded(vars []string, what, fix string) string {
	return fmt.Sprintf("Kubernetes does not expand %s: %s, which the deepspeed launcher reads, and Kubernetes expands $(VAR) only in a container's command, args and env; %s", schema.AndList(vars), what, fix)
}

// at returns the value at path in values, or nil.
func at(values map[string]any, path diag.Path) any {
	var v any = values
	for _, key := range path {
		m, _ := v.(map[string]any)
		v = m[key]
	}
	return v
}

func looksLikeCredential(name string) bool {
	for _, word := range strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if credentialWord.MatchString(word) {
			return true
		}
	}
	return false
}

func firstWord(v any) string {
	s, _ := v.(string)
	if fields := strings.Fields(s); len(fields) > 0 {
		return fields[0]
	}
	return ""
}

func launch(values map[string]any) string {
	ds, _ := values["deepspeed"].(map[string]any)
	if l, ok := ds["launch"].(string); ok {
		return l
	}
	return "python"
}
