{{- /*
The pod: the PodTemplateSpec every replica of every kind shares, and what goes
into it: the training container's resources and env, the node affinity, the
pod's labels. Each kind gives the container's name, command and args.
*/ -}}

{{- /*
torchwrap.podTemplate: the PodTemplateSpec shared by every replica of every job
kind, written into the dict .out. Takes the render context as .ctx, and the
training container's name, and its command and args when the kind sets them, as
.containerName, .command and .args; and .env, the variables the kind sets in the
training container, before those of torchwrap.env.
*/ -}}
{{- define "torchwrap.podTemplate" -}}
{{- $v := .ctx.Values -}}
{{- /* A failed container's last lines stay in its pod's status (the kubelet's
       termination message), for whoever asks why it failed. */ -}}
{{- $container := dict "name" .containerName "image" $v.containerImage "imagePullPolicy" $v.imagePullPolicy "terminationMessagePolicy" "FallbackToLogsOnError" -}}
{{- with .command -}}
{{- $_ := set $container "command" . -}}
{{- end -}}
{{- with .args -}}
{{- $_ := set $container "args" . -}}
{{- end -}}
{{- $_ := set $container "resources" (include "torchwrap.resources" $v | fromJson) -}}
{{- with concat (.env | default list) (include "torchwrap.env" $v | fromJson).env -}}
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
{{- $security := include "torchwrap.securityContext" $v | fromJson -}}
{{- $containerSecurity := deepCopy $security.container -}}
{{- if or (gt (int $v.numRoceGdr) 0) (eq (toString $v.serviceAccountName) "gdr") -}}
{{- $capabilities := $containerSecurity.capabilities | default dict -}}
{{- $_ := set $capabilities "add" (list "IPC_LOCK") -}}
{{- $_ := set $containerSecurity "capabilities" $capabilities -}}
{{- end -}}
{{- with $containerSecurity -}}
{{- $_ := set $container "securityContext" . -}}
{{- end -}}

{{- $spec := dict "containers" (list $container) "affinity" (include "torchwrap.affinity" $v | fromJson) -}}
{{- with $security.pod -}}
{{- $_ := set $spec "securityContext" . -}}
{{- end -}}
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
{{- $init := list -}}
{{- range . -}}
{{- $one := merge (dict "terminationMessagePolicy" "FallbackToLogsOnError") . -}}
{{- with $security.container -}}
{{- $_ := set $one "securityContext" (deepCopy .) -}}
{{- end -}}
{{- $init = append $init $one -}}
{{- end -}}
{{- $_ := set $spec "initContainers" $init -}}
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
{{- $annotations := merge (include "torchwrap.ownPodAnnotations" $v | fromJson).annotations ($v.podAnnotations | default dict) -}}
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

{{- /*
torchwrap.securityContext: the pods' security context ("pod") and every
container's ("container"), from securityContext, with what podSecurity:
restricted needs where securityContext leaves it out: runAsNonRoot and the
RuntimeDefault seccomp profile on the pod, no privilege escalation and every
capability dropped in each container. Empty when neither is set, so that a job
without them is as the kind makes it.
*/ -}}
{{- define "torchwrap.securityContext" -}}
{{- $sc := .securityContext | default dict -}}
{{- $restricted := eq (toString .podSecurity) "restricted" -}}
{{- $pod := dict -}}
{{- range $field := list "runAsUser" "runAsGroup" "fsGroup" -}}
{{- if not (kindIs "invalid" (index $sc $field)) -}}
{{- $_ := set $pod $field (index $sc $field) -}}
{{- end -}}
{{- end -}}
{{- if kindIs "bool" $sc.runAsNonRoot -}}
{{- $_ := set $pod "runAsNonRoot" $sc.runAsNonRoot -}}
{{- else if $restricted -}}
{{- $_ := set $pod "runAsNonRoot" true -}}
{{- end -}}
{{- with $sc.seccompProfile | default (ternary "RuntimeDefault" "" $restricted) -}}
{{- $_ := set $pod "seccompProfile" (dict "type" .) -}}
{{- end -}}
{{- $container := dict -}}
{{- if kindIs "bool" $sc.allowPrivilegeEscalation -}}
{{- $_ := set $container "allowPrivilegeEscalation" $sc.allowPrivilegeEscalation -}}
{{- else if $restricted -}}
{{- $_ := set $container "allowPrivilegeEscalation" false -}}
{{- end -}}
{{- with $sc.dropCapabilities | default (ternary (list "ALL") (list) $restricted) -}}
{{- $_ := set $container "capabilities" (dict "drop" .) -}}
{{- end -}}
{{- toJson (dict "pod" $pod "container" $container) -}}
{{- end -}}

{{- /* torchwrap.resources: requests and limits of the training container; zero accelerator and RoCE counts are left out. */ -}}
{{- define "torchwrap.resources" -}}
{{- $requests := dict "cpu" .numCpusPerPod "memory" .totalMemoryPerPod -}}
{{- $limits := dict "cpu" (.limitCpusPerPod | default .numCpusPerPod) "memory" (.limitMemoryPerPod | default .totalMemoryPerPod) -}}
{{- if gt (int .numGpusPerPod) 0 -}}
{{- $_ := set $requests .gpuResName .numGpusPerPod -}}
{{- $_ := set $limits .gpuResName .numGpusPerPod -}}
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

{{- /* torchwrap.affinity: keep pods off nodes that autopilot marks unhealthy and off hostIgnoreList. */ -}}
{{- define "torchwrap.affinity" -}}
{{- $expressions := list (dict "key" "autopilot.ibm.com/gpuhealth" "operator" "NotIn" "values" (list "ERR" "TESTING" "EVICT")) -}}
{{- with .hostIgnoreList -}}
{{- $expressions = append $expressions (dict "key" "kubernetes.io/hostname" "operator" "NotIn" "values" .) -}}
{{- end -}}
{{- $terms := list (dict "matchExpressions" $expressions) -}}
{{- toJson (dict "nodeAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $terms))) -}}
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

{{- /*
torchwrap.ownPodAnnotations: the annotations the generator puts on every pod,
as {"annotations": {key: value}, "by": {key: the setting that sets it}}: the
network of multiNicNetworkName, and Kueue's topology-aware placement of
topology. Kueue keeps each pod template (podSet) in one domain of the level; a
job whose master and workers are pod templates of their own (a PyTorchJob's or a
PyTorchTrainingJob's, of more than one pod) also names one podSet group, the
jobName, so that they share the domain.
*/ -}}
{{- define "torchwrap.ownPodAnnotations" -}}
{{- $annotations := dict -}}
{{- $by := dict -}}
{{- with .multiNicNetworkName -}}
{{- $_ := set $annotations "k8s.v1.cni.cncf.io/networks" . -}}
{{- $_ := set $by "k8s.v1.cni.cncf.io/networks" "multiNicNetworkName" -}}
{{- end -}}
{{- with .topology -}}
{{- range $mode, $level := . -}}
{{- $_ := set $annotations (printf "kueue.x-k8s.io/podset-%s-topology" $mode) $level -}}
{{- $_ := set $by (printf "kueue.x-k8s.io/podset-%s-topology" $mode) "topology" -}}
{{- end -}}
{{- if and (has $.jobKind (list "PyTorchJob" "PyTorchTrainingJob")) (gt (int $.numPods) 1) -}}
{{- $_ := set $annotations "kueue.x-k8s.io/podset-group-name" $.jobName -}}
{{- $_ := set $by "kueue.x-k8s.io/podset-group-name" "topology" -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "annotations" $annotations "by" $by) -}}
{{- end -}}

{{- /* torchwrap.sakkara: "true" when the pods are scheduled by Sakkara. */ -}}
{{- define "torchwrap.sakkara" -}}
{{- and .schedulerName (eq .schedulerName "sakkara") (not .bypassCoscheduler) -}}
{{- end -}}

{{- /*
torchwrap.containerName: the name of the training container, for .jobKind:
worker in a DeepSpeedJob, as T9k's examples name it; node in a TrainJob, the
container of the training runtime that Kubeflow Trainer gives the trainer's
settings; pytorch otherwise, the name the PyTorchJob operator requires (and
T9k's PyTorchTrainingJob uses).
*/ -}}
{{- define "torchwrap.containerName" -}}
{{- get (dict "DeepSpeedJob" "worker" "TrainJob" "node") .jobKind | default "pytorch" -}}
{{- end -}}
