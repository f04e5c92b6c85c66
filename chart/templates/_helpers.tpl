{{- /*
Shared helpers. Every helper builds data (dicts and lists): small ones hand it
back as JSON, which the caller reads with fromJson; torchwrap.podTemplate, which
builds a big part, fills the dict its caller passes as .out, to spare a JSON
round trip. The one YAML text is written by torchwrap.manifest with toYaml.
No settings string is ever spliced into YAML text.

Most helpers take the render context built in torchwrap.manifest:
  .Values        the settings
  .customLabels  the customLabels as a map
  .storage       the volumes and their mounts, in pod order (torchwrap.storage)
  .component     the dict that torchwrap.component.<jobKind> fills
*/ -}}

{{- /* torchwrap.customLabels: the customLabels list as a map of label keys to values. */ -}}
{{- define "torchwrap.customLabels" -}}
{{- $labels := dict -}}
{{- range .customLabels -}}
{{- $_ := set $labels .key .value -}}
{{- end -}}
{{- toJson $labels -}}
{{- end -}}

{{- /*
torchwrap.storage: every volume of the pod with its mount in the training
container, in pod order. Each entry: volume, mount, what (for messages), and the
settings keys its name and mount path come from (empty when the generator fixes
them). Used to build the pod and to check for clashes.
*/ -}}
{{- define "torchwrap.storage" -}}
{{- $entries := list -}}
{{- with .topologyFileConfigMap -}}
{{- $entries = append $entries (dict
    "what" "the topology file volume (topologyFileConfigMap)"
    "volume" (dict "name" "topology-volume" "configMap" (dict "name" .))
    "mount" (dict "name" "topology-volume" "mountPath" "/var/run/nvidia-topologyd")) -}}
{{- end -}}
{{- with .mountNVMe -}}
{{- $claim := dict
    "storageClassName" (.storageClassName | default "odf-lvm-vg1")
    "volumeMode" "Filesystem"
    "accessModes" (list "ReadWriteOnce")
    "resources" (dict "requests" (dict "storage" .storage)) -}}
{{- $entries = append $entries (dict
    "what" "the NVMe scratch volume (mountNVMe)"
    "pathKey" (ternary "mountNVMe.mountPath" "" (not (empty .mountPath)))
    "volume" (dict "name" "ephemeral-odf-lvm-vg1" "ephemeral" (dict "volumeClaimTemplate" (dict "spec" $claim)))
    "mount" (dict "name" "ephemeral-odf-lvm-vg1" "mountPath" (.mountPath | default "/workspace/scratch-nvme"))) -}}
{{- end -}}
{{- range $i, $volume := .volumes -}}
{{- $entries = append $entries (dict
    "what" (printf "volumes[%d]" $i)
    "nameKey" (printf "volumes[%d].name" $i)
    "pathKey" (printf "volumes[%d].mountPath" $i)
    "volume" (dict "name" $volume.name "persistentVolumeClaim" (dict "claimName" $volume.claimName))
    "mount" (merge (dict "name" $volume.name "mountPath" $volume.mountPath) (pick $volume "readOnly" "subPath"))) -}}
{{- end -}}
{{- with .sshGitCloneConfig -}}
{{- $entries = append $entries (dict
    "what" "the ssh deploy key volume (sshGitCloneConfig.secretName)"
    "pathKey" (ternary "sshGitCloneConfig.secretMountPath" "" (not (empty .secretMountPath)))
    "volume" (dict "name" "private-ssh-git-deploy-key" "secret" (dict "secretName" .secretName "optional" false))
    "mount" (dict "name" "private-ssh-git-deploy-key" "mountPath" (include "torchwrap.sshKeyPath" .) "readOnly" true)) -}}
{{- $entries = append $entries (dict
    "what" "the ssh known hosts volume (sshGitCloneConfig.configMapName)"
    "pathKey" (ternary "sshGitCloneConfig.configMapMountPath" "" (not (empty .configMapMountPath)))
    "volume" (dict "name" "github-known-hosts" "configMap" (dict "name" .configMapName))
    "mount" (dict "name" "github-known-hosts" "mountPath" (include "torchwrap.sshHostsPath" .))) -}}
{{- end -}}
{{- if not .disableSharedMemory -}}
{{- $emptyDir := dict "medium" "Memory" -}}
{{- with .sharedMemorySize -}}
{{- $_ := set $emptyDir "sizeLimit" . -}}
{{- end -}}
{{- $entries = append $entries (dict
    "what" "the shared memory volume (dshm)"
    "volume" (dict "name" "dshm" "emptyDir" $emptyDir)
    "mount" (dict "name" "dshm" "mountPath" "/dev/shm")) -}}
{{- end -}}
{{- toJson (dict "entries" $entries) -}}
{{- end -}}

{{- define "torchwrap.sshKeyPath" -}}{{ .secretMountPath | default "/tmp/.ssh/keys" }}{{- end -}}
{{- define "torchwrap.sshHostsPath" -}}{{ .configMapMountPath | default "/tmp/.ssh/hosts" }}{{- end -}}

{{- /*
torchwrap.check: the rules the JSON schema cannot express. All problems are
reported at once, one per line, each as "key.path: what is wrong; how to fix it".
*/ -}}
{{- define "torchwrap.check" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- if and (not (kindIs "invalid" $v.limitGpusPerPod)) (ne (int $v.limitGpusPerPod) (int $v.numGpusPerPod)) -}}
{{- $problems = append $problems (printf "limitGpusPerPod: %d differs from numGpusPerPod (%d), and Kubernetes requires a GPU limit to equal its request; remove limitGpusPerPod" (int $v.limitGpusPerPod) (int $v.numGpusPerPod)) -}}
{{- end -}}
{{- $seen := dict "name" (dict) "mountPath" (dict) -}}
{{- range $entry := .storage -}}
{{- range $field, $keyField := dict "name" "nameKey" "mountPath" "pathKey" -}}
{{- $value := index $entry.mount $field -}}
{{- $owners := index $seen $field -}}
{{- with $previous := index $owners $value -}}
{{- /* Report at the entry whose value the user chose; name the other one. */ -}}
{{- $key := index $entry $keyField | default "" -}}
{{- $other := $previous -}}
{{- if not $key -}}
{{- $key = index $previous $keyField -}}
{{- $other = $entry -}}
{{- end -}}
{{- $problems = append $problems (printf "%s: %q is already the %s of %s; choose another" $key $value (ternary "name" "mount path" (eq $field "name")) $other.what) -}}
{{- end -}}
{{- $_ := set $owners $value $entry -}}
{{- end -}}
{{- end -}}
{{- range $setting := list (list "limitCpusPerPod" "numCpusPerPod") (list "limitMemoryPerPod" "totalMemoryPerPod") -}}
{{- $limit := index $v (first $setting) -}}
{{- $request := index $v (last $setting) -}}
{{- if not (kindIs "invalid" $limit) -}}
{{- /* Refused when below the request by more than float64 rounding. */ -}}
{{- if lt (float64 (include "torchwrap.quantity" $limit)) (mulf (float64 (include "torchwrap.quantity" $request)) (subf 1 1e-14)) -}}
{{- $problems = append $problems (printf "%s: %v is below %s (%v), and Kubernetes refuses a limit below its request; raise it, or remove it to use the request" (first $setting) $limit (last $setting) $request) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq $v.jobKind "DeepSpeedJob" -}}
{{- range $entry := .storage -}}
{{- $mount := trimSuffix "/" $entry.mount.mountPath -}}
{{- $hidden := list -}}
{{- range $reserved := list "/root/.ssh" "/t9k/hostfile" "/root/.deepspeed_env" -}}
{{- if or (eq $mount $reserved) (hasPrefix (print $mount "/") $reserved) (hasPrefix (print $reserved "/") $mount) -}}
{{- $hidden = append $hidden $reserved -}}
{{- end -}}
{{- end -}}
{{- with $hidden -}}
{{- $problems = append $problems (printf "%s: %q would hide %s, which the DeepSpeed launcher needs to reach the other workers; mount %s elsewhere" $entry.pathKey $entry.mount.mountPath (join " and " .) $entry.what) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $v.elastic -}}
{{- if gt (int .minPods) (int $v.numPods) -}}
{{- $problems = append $problems (printf "elastic.minPods: %d is more than numPods (%d), the pods the job starts with; lower minPods or raise numPods" (int .minPods) (int $v.numPods)) -}}
{{- end -}}
{{- if lt (int .maxPods) (int $v.numPods) -}}
{{- $problems = append $problems (printf "elastic.maxPods: %d is less than numPods (%d), the pods the job starts with; raise maxPods or lower numPods" (int .maxPods) (int $v.numPods)) -}}
{{- end -}}
{{- end -}}
{{- if eq (include "torchwrap.wordsOfMainProgram" $v) "true" -}}
{{- with (include "torchwrap.words" $v.mainProgram | fromJson).error -}}
{{- $problems = append $problems (printf "mainProgram: %s; it is split into words as a shell would (without running one), so close every quote and escape a final backslash" .) -}}
{{- end -}}
{{- end -}}
{{- range $i, $t := $v.tolerations -}}
{{- $operator := $t.operator | default "Equal" -}}
{{- if and (not $t.key) (ne $operator "Exists") -}}
{{- $problems = append $problems (printf "tolerations[%d].operator: a toleration without key tolerates every taint and needs operator Exists; set operator: Exists, or a key" $i) -}}
{{- end -}}
{{- if and (eq $operator "Exists") $t.value -}}
{{- $problems = append $problems (printf "tolerations[%d].value: operator Exists matches any value; remove the value, or use operator: Equal" $i) -}}
{{- end -}}
{{- if and (hasKey $t "tolerationSeconds") (ne (toString $t.effect) "NoExecute") -}}
{{- $problems = append $problems (printf "tolerations[%d].tolerationSeconds: applies to effect NoExecute only; set effect: NoExecute, or remove tolerationSeconds" $i) -}}
{{- end -}}
{{- end -}}
{{- if and $v.multiNicNetworkName (hasKey ($v.podAnnotations | default dict) "k8s.v1.cni.cncf.io/networks") -}}
{{- $problems = append $problems "podAnnotations[\"k8s.v1.cni.cncf.io/networks\"]: is set by multiNicNetworkName; remove one of the two" -}}
{{- end -}}
{{- with $v.podLabels -}}
{{- $ownLabels := include "torchwrap.ownPodLabels" $ | fromJson -}}
{{- range $key := keys . | sortAlpha -}}
{{- if hasKey $ownLabels $key -}}
{{- $problems = append $problems (printf "podLabels[%q]: is a label customLabels or autopilotHealthChecks set already; remove it from podLabels" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $i, $code := $v.retryableExitCodes -}}
{{- if has $code ($v.terminalExitCodes | default list) -}}
{{- $problems = append $problems (printf "retryableExitCodes[%d]: %v is in terminalExitCodes too; keep it in one of the two" $i $code) -}}
{{- end -}}
{{- end -}}
{{- with $problems -}}
{{- fail (join "\n" .) -}}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.wordsOfMainProgram: "true" when the job runs its mainProgram without
a shell, as a list of words: a DeepSpeedJob, and a PyTorchTrainingJob in T9k's
torchrun mode.
*/ -}}
{{- define "torchwrap.wordsOfMainProgram" -}}
{{- or (and (eq .jobKind "DeepSpeedJob") (not (empty .mainProgram))) (eq (include "torchwrap.t9kTorchrun" .) "true") -}}
{{- end -}}

{{- /*
torchwrap.t9kTorchrun: "true" when a PyTorchTrainingJob launches with T9k's own
torchrun: it has a mainProgram and no setupCommands.
*/ -}}
{{- define "torchwrap.t9kTorchrun" -}}
{{- and (eq .jobKind "PyTorchTrainingJob") (not (empty .mainProgram)) (empty .setupCommands) -}}
{{- end -}}

{{- /*
torchwrap.words: a command line split into words as a POSIX shell splits it,
without expanding anything: blanks separate words; '...' keeps everything;
"..." keeps everything but \ before $ ` " \ or a newline; \ outside quotes keeps
the next character, and a backslash-newline joins lines. Returns {"words": [...]},
or {"error": "..."} for an unclosed quote or a final backslash.
*/ -}}
{{- define "torchwrap.words" -}}
{{- if gt (len .) 8192 -}}
{{- /* The schema caps mainProgram at 8192 too; the loop below must stay short
       even on settings not validated yet. */ -}}
{{- toJson (dict "error" "it is longer than 8192 characters") -}}
{{- else -}}
{{- /* The line in pieces: blanks; unquoted text; a backslash and the character
       after it; a '...' string; a "..." string with its backslash pairs; and
       last, any one character none of those takes, which is where the shell
       would fail: a quote it cannot close, or a final backslash. */ -}}
{{- $pieces := regexFindAll `[ \t\n]+|[^ \t\n'"\\]+|\\(?s:.)|'[^']*'|"(?:[^"\\]|\\(?s:.))*"|(?s:.)` . -1 -}}
{{- $words := list -}}
{{- $word := "" -}}
{{- $inWord := false -}}
{{- $error := "" -}}
{{- range $p := $pieces -}}
{{- if $error -}}
{{- else if eq $p "\\" -}}
{{- $error = "it ends with a backslash" -}}
{{- else if has $p (list "'" "\"") -}}
{{- $error = printf "a %s quote is not closed" $p -}}
{{- else if has (substr 0 1 $p) (list " " "\t" "\n") -}}
{{- if $inWord -}}
{{- $words = append $words $word -}}
{{- end -}}
{{- $word = "" -}}
{{- $inWord = false -}}
{{- else if eq $p "\\\n" -}}
{{- /* A backslash-newline only joins lines. */ -}}
{{- else -}}
{{- if hasPrefix "'" $p -}}
{{- $word = print $word (substr 1 (int (sub (len $p) 1)) $p) -}}
{{- else if hasPrefix "\"" $p -}}
{{- $word = print $word (regexReplaceAll "\\\\(?:\n|([$`\"\\\\]))" (substr 1 (int (sub (len $p) 1)) $p) "${1}") -}}
{{- else -}}
{{- $word = print $word (trimPrefix "\\" $p) -}}
{{- end -}}
{{- $inWord = true -}}
{{- end -}}
{{- end -}}
{{- if $error -}}
{{- toJson (dict "error" $error) -}}
{{- else -}}
{{- if $inWord -}}
{{- $words = append $words $word -}}
{{- end -}}
{{- toJson (dict "words" $words) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.quantity: a Kubernetes quantity (such as 500m, 1.5Gi, 1e3, or a whole
number) as a plain number, for comparisons.
*/ -}}
{{- define "torchwrap.quantity" -}}
{{- $s := toString . -}}
{{- $scale := 1.0 -}}
{{- $suffix := regexFind "(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])$" $s -}}
{{- if and $suffix (not (regexMatch "[eE][-+]?[0-9]+$" $s)) -}}
{{- $scale = index (dict
    "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0
    "n" 1e-9 "u" 1e-6 "m" 1e-3 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18) $suffix -}}
{{- $s = trimSuffix $suffix $s -}}
{{- end -}}
{{- mulf (float64 $s) $scale -}}
{{- end -}}

{{- /*
torchwrap.ownPodLabels: the labels the generator puts on every pod: the
customLabels, and autopilot's with autopilotHealthChecks. Takes the render
context.
*/ -}}
{{- define "torchwrap.ownPodLabels" -}}
{{- $labels := deepCopy .customLabels -}}
{{- with .Values.autopilotHealthChecks -}}
{{- $_ := set $labels "autopilot" "" -}}
{{- range . -}}
{{- $_ := set $labels . "" -}}
{{- end -}}
{{- end -}}
{{- toJson $labels -}}
{{- end -}}

{{- /* torchwrap.affinity: keep pods off nodes that autopilot marks unhealthy and off hostIgnoreList. */ -}}
{{- define "torchwrap.affinity" -}}
{{- $expressions := list (dict "key" "autopilot.ibm.com/gpuhealth" "operator" "NotIn" "values" (list "ERR" "TESTING" "EVICT")) -}}
{{- with .hostIgnoreList -}}
{{- $expressions = append $expressions (dict "key" "kubernetes.io/hostname" "operator" "NotIn" "values" .) -}}
{{- end -}}
{{- $terms := list (dict "matchExpressions" $expressions) -}}
{{- toJson (dict "nodeAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $terms))) -}}
{{- end -}}

{{- /* torchwrap.resources: requests and limits of the training container; zero GPU and RoCE counts are left out. */ -}}
{{- define "torchwrap.resources" -}}
{{- $requests := dict "cpu" .numCpusPerPod "memory" .totalMemoryPerPod -}}
{{- $limits := dict "cpu" (.limitCpusPerPod | default .numCpusPerPod) "memory" (.limitMemoryPerPod | default .totalMemoryPerPod) -}}
{{- if gt (int .numGpusPerPod) 0 -}}
{{- $_ := set $requests "nvidia.com/gpu" .numGpusPerPod -}}
{{- $_ := set $limits "nvidia.com/gpu" .numGpusPerPod -}}
{{- end -}}
{{- if gt (int .numRoceGdr) 0 -}}
{{- $gdr := .roceGdrResName | default "nvidia.com/roce_gdr" -}}
{{- $_ := set $requests $gdr .numRoceGdr -}}
{{- $_ := set $limits $gdr .numRoceGdr -}}
{{- end -}}
{{- toJson (dict "requests" $requests "limits" $limits) -}}
{{- end -}}

{{- /*
torchwrap.env: the training container's env, in this order: SAKKARA_RANK,
NCCL_TOPO_FILE, NVME_MOUNT_PATH, the distributedDebug preset (but the variables
environmentVariables sets), the user's environmentVariables, GIT_SSH_COMMAND.
*/ -}}
{{- define "torchwrap.env" -}}
{{- $env := list -}}
{{- if eq (include "torchwrap.sakkara" .) "true" -}}
{{- $env = append $env (dict "name" "SAKKARA_RANK" "valueFrom" (dict "fieldRef" (dict "fieldPath" "metadata.labels['sakkara.member.rank']"))) -}}
{{- end -}}
{{- if .topologyFileConfigMap -}}
{{- $env = append $env (dict "name" "NCCL_TOPO_FILE" "value" "/var/run/nvidia-topologyd/virtualTopology.xml") -}}
{{- end -}}
{{- with .mountNVMe -}}
{{- $env = append $env (dict "name" "NVME_MOUNT_PATH" "value" (.mountPath | default "/workspace/scratch-nvme")) -}}
{{- end -}}
{{- if .distributedDebug -}}
{{- $own := dict -}}
{{- range .environmentVariables -}}
{{- $_ := set $own .name true -}}
{{- end -}}
{{- range $preset := list
    (list "NCCL_DEBUG" "INFO")
    (list "NCCL_DEBUG_SUBSYS" "INIT,NET")
    (list "TORCH_DISTRIBUTED_DEBUG" "DETAIL")
    (list "TORCH_CPP_LOG_LEVEL" "INFO")
    (list "TORCH_SHOW_CPP_STACKTRACES" "1")
    (list "LOGLEVEL" "INFO")
    (list "PYTHONFAULTHANDLER" "1") -}}
{{- if not (hasKey $own (first $preset)) -}}
{{- $env = append $env (dict "name" (first $preset) "value" (last $preset)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range .environmentVariables -}}
{{- if hasKey . "value" -}}
{{- $env = append $env (dict "name" .name "value" (include "torchwrap.literal" .value)) -}}
{{- else if .secret -}}
{{- $env = append $env (dict "name" .name "valueFrom" (dict "secretKeyRef" (dict "name" .secret.name "key" .secret.key))) -}}
{{- else -}}
{{- $env = append $env (dict "name" .name "valueFrom" (dict "configMapKeyRef" (dict "name" .configmap.name "key" .configmap.key))) -}}
{{- end -}}
{{- end -}}
{{- with .sshGitCloneConfig -}}
{{- $default := printf "ssh -i %s/id_rsa -o UserKnownHostsFile=%s/known_hosts -vv" (include "torchwrap.sshKeyPath" .) (include "torchwrap.sshHostsPath" .) -}}
{{- $env = append $env (dict "name" "GIT_SSH_COMMAND" "value" (.sshCmd | default $default)) -}}
{{- end -}}
{{- toJson (dict "env" $env) -}}
{{- end -}}

{{- /*
torchwrap.literal: an environment variable's literal value as a string. Whole
numbers are written without exponent or fraction (6, not 6e+00 or 6.0).
*/ -}}
{{- define "torchwrap.literal" -}}
{{- if and (kindIs "float64" .) (eq (floor .) .) -}}
{{- printf "%.0f" . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{- /* torchwrap.sakkara: "true" when the pods are scheduled by Sakkara. */ -}}
{{- define "torchwrap.sakkara" -}}
{{- and .schedulerName (eq .schedulerName "sakkara") (not .bypassCoscheduler) -}}
{{- end -}}

{{- /*
torchwrap.setupScript: the lines every launch script starts with: Sakkara's rank
when Sakkara schedules the pods, then the user's setupCommands, in order.
*/ -}}
{{- define "torchwrap.setupScript" -}}
{{- if eq (include "torchwrap.sakkara" .) "true" }}
echo "Sakkara schedules this job: RANK is the rank Sakkara assigned (${SAKKARA_RANK})"
export RANK=$SAKKARA_RANK
{{- end }}
{{- range .setupCommands }}
{{ . }}
{{- end }}
{{- end -}}

{{- /*
torchwrap.podTemplate: the PodTemplateSpec shared by every replica of every job
kind, written into the dict .out. Takes the render context as .ctx, and the
training container's name, and its command and args when the kind sets them, as
.containerName, .command and .args.
*/ -}}
{{- define "torchwrap.podTemplate" -}}
{{- $v := .ctx.Values -}}
{{- $container := dict "name" .containerName "image" $v.containerImage "imagePullPolicy" $v.imagePullPolicy -}}
{{- with .command -}}
{{- $_ := set $container "command" . -}}
{{- end -}}
{{- with .args -}}
{{- $_ := set $container "args" . -}}
{{- end -}}
{{- $_ := set $container "resources" (include "torchwrap.resources" $v | fromJson) -}}
{{- with (include "torchwrap.env" $v | fromJson).env -}}
{{- $_ := set $container "env" . -}}
{{- end -}}
{{- $envFrom := $v.envFrom | default list -}}
{{- with $v.ncclGdrEnvConfigMap -}}
{{- $envFrom = append $envFrom (dict "configMapRef" (dict "name" .)) -}}
{{- end -}}
{{- with $envFrom -}}
{{- $_ := set $container "envFrom" . -}}
{{- end -}}
{{- $volumes := list -}}
{{- $mounts := list -}}
{{- range .ctx.storage -}}
{{- $volumes = append $volumes .volume -}}
{{- $mounts = append $mounts .mount -}}
{{- end -}}
{{- with $mounts -}}
{{- $_ := set $container "volumeMounts" . -}}
{{- end -}}
{{- if or (gt (int $v.numRoceGdr) 0) (eq (toString $v.serviceAccountName) "gdr") -}}
{{- $_ := set $container "securityContext" (dict "capabilities" (dict "add" (list "IPC_LOCK"))) -}}
{{- end -}}

{{- $spec := dict "containers" (list $container) "affinity" (include "torchwrap.affinity" $v | fromJson) -}}
{{- with $volumes -}}
{{- $_ := set $spec "volumes" . -}}
{{- end -}}
{{- with $v.serviceAccountName -}}
{{- $_ := set $spec "serviceAccountName" . -}}
{{- end -}}
{{- with $v.imagePullSecrets -}}
{{- $_ := set $spec "imagePullSecrets" . -}}
{{- end -}}
{{- with $v.initContainers -}}
{{- $_ := set $spec "initContainers" . -}}
{{- end -}}
{{- if not (kindIs "invalid" $v.terminationGracePeriodSeconds) -}}
{{- $_ := set $spec "terminationGracePeriodSeconds" $v.terminationGracePeriodSeconds -}}
{{- end -}}
{{- if $v.bypassCoscheduler -}}
{{- $_ := set $spec "schedulerName" "default-scheduler" -}}
{{- else if $v.schedulerName -}}
{{- $_ := set $spec "schedulerName" $v.schedulerName -}}
{{- end -}}
{{- with $v.priority -}}
{{- $_ := set $spec "priorityClassName" . -}}
{{- end -}}
{{- with $v.nodeSelector -}}
{{- $_ := set $spec "nodeSelector" . -}}
{{- end -}}
{{- with $v.tolerations -}}
{{- $_ := set $spec "tolerations" . -}}
{{- end -}}

{{- $labels := merge (include "torchwrap.ownPodLabels" .ctx | fromJson) ($v.podLabels | default dict) -}}
{{- $annotations := deepCopy ($v.podAnnotations | default dict) -}}
{{- with $v.multiNicNetworkName -}}
{{- $_ := set $annotations "k8s.v1.cni.cncf.io/networks" . -}}
{{- end -}}
{{- $metadata := dict -}}
{{- with $labels -}}
{{- $_ := set $metadata "labels" . -}}
{{- end -}}
{{- with $annotations -}}
{{- $_ := set $metadata "annotations" . -}}
{{- end -}}
{{- $_ := set .out "spec" $spec -}}
{{- with $metadata -}}
{{- $_ := set $.out "metadata" . -}}
{{- end -}}
{{- end -}}
