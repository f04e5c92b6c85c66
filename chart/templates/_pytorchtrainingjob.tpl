{{- /*
T9k's PyTorchTrainingJob (batch.tensorstack.dev/v1beta1) as an AppWrapper
component.

replicaSpecs: master x1, then worker x(numPods-1), no worker entry for one pod.
It launches in one of two ways:
- torchrun mode, when there is a mainProgram, no setupCommands and no
  workspace to unpack (--workspace): T9k's own torchrun (torchrunConfig) runs
  the first container's args, mainProgram split into words; no shell runs, so
  $VAR is not expanded (Kubernetes expands $(VAR)). Elastic training needs
  this mode.
- script mode, otherwise: the container runs sh -c with the setup commands,
  then a torchrun line for the MASTER_ADDR and MASTER_PORT T9k sets.
*/ -}}
{{- define "torchwrap.component.PyTorchTrainingJob" -}}
{{- $v := .Values -}}
{{- $spec := include "torchwrap.t9kSpec" $v | fromJson -}}
{{- $torchrun := $v.torchrun | default dict -}}
{{- $pod := dict -}}
{{- if eq (include "torchwrap.t9kTorchrun" $v) "true" -}}
{{- $config := dict "enabled" true "procPerNode" (include "torchwrap.processesPerPod" $v) "rdzvBackend" "c10d" -}}
{{- if hasKey $torchrun "maxRestarts" -}}
{{- $_ := set $config "maxRestarts" $torchrun.maxRestarts -}}
{{- end -}}
{{- with $torchrun.extraOptions -}}
{{- $_ := set $config "extraOptions" . -}}
{{- end -}}
{{- $_ := set $spec "torchrunConfig" $config -}}
{{- $args := (include "torchwrap.words" $v.mainProgram | fromJson).words -}}
{{- $pod = dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" (include "torchwrap.containerName" $v) "command" (list "python") "args" $args "out" $pod) -}}
{{- else -}}
{{- $command := list "sh" "-c" (include "torchwrap.pytorchtrainingjob.script" $v) -}}
{{- $pod = dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" (include "torchwrap.containerName" $v) "command" $command "out" $pod) -}}
{{- end -}}
{{- with $v.tensorboardSpec -}}
{{- $_ := set $spec "tensorboardSpec" . -}}
{{- end -}}

{{- $replicaSpecs := list -}}
{{- $podSets := list -}}
{{- $workers := sub (int $v.numPods) 1 -}}
{{- range $i, $replicas := list (dict "type" "master" "replicas" 1) (dict "type" "worker" "replicas" $workers) -}}
{{- if gt (int $replicas.replicas) 0 -}}
{{- $entry := merge (dict "restartPolicy" $v.restartPolicy "template" $pod) $replicas -}}
{{- with $v.elastic -}}
{{- if hasKey . "scalingWeight" -}}
{{- $_ := set $entry "scalingWeight" .scalingWeight -}}
{{- end -}}
{{- end -}}
{{- $replicaSpecs = append $replicaSpecs $entry -}}
{{- $podSets = append $podSets (dict "path" (printf "template.spec.replicaSpecs[%d].template" $i) "replicas" $replicas.replicas) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $spec "replicaSpecs" $replicaSpecs -}}

{{- include "torchwrap.job" (dict "ctx" . "apiVersion" "batch.tensorstack.dev/v1beta1" "kind" "PyTorchTrainingJob" "spec" $spec) -}}
{{- $_ := set .component "podSets" $podSets -}}
{{- end -}}

{{- /*
torchwrap.pytorchtrainingjob.script: the script of script mode. T9k sets
MASTER_ADDR and MASTER_PORT (the master replica's address); torchrun meets
there with a c10d rendezvous, which assigns each pod its rank.
*/ -}}
{{- define "torchwrap.pytorchtrainingjob.script" -}}
{{- include "torchwrap.launchScript" (dict
    "Values" .
    "options" (list (printf "--nnodes=%d" (int .numPods)) (printf "--nproc_per_node=%s" (include "torchwrap.processesPerPod" .)) "--rdzv_backend=c10d")
    "maxRestarts" true
    "endpoint" `"${MASTER_ADDR}:${MASTER_PORT}"`
    "announce" (printf "Starting torchrun on %d pods" (int .numPods))) -}}
{{- end -}}
