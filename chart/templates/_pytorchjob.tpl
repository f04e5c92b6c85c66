{{- /*
The Kubeflow PyTorchJob (kubeflow.org/v1) as an AppWrapper component.

Master has one replica, Worker numPods-1 and no entry at all for a one-pod job
(the PyTorchJob webhook refuses Worker replicas of 0). The AppWrapper controller
infers the podSets of a PyTorchJob by itself, so the component declares none.
*/ -}}
{{- define "torchwrap.component.PyTorchJob" -}}
{{- $v := .Values -}}
{{- $command := list "sh" "-c" (include "torchwrap.pytorchjob.script" $v) -}}
{{- $pod := dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" "pytorch" "command" $command "out" $pod) -}}
{{- $replicaSpecs := dict "Master" (dict "replicas" 1 "restartPolicy" $v.restartPolicy "template" $pod) -}}
{{- if gt (int $v.numPods) 1 -}}
{{- $_ := set $replicaSpecs "Worker" (dict "replicas" (sub (int $v.numPods) 1) "restartPolicy" $v.restartPolicy "template" $pod) -}}
{{- end -}}
{{- $metadata := dict "name" $v.jobName -}}
{{- with .customLabels -}}
{{- $_ := set $metadata "labels" . -}}
{{- end -}}
{{- $job := dict "apiVersion" "kubeflow.org/v1" "kind" "PyTorchJob" "metadata" $metadata "spec" (dict "pytorchReplicaSpecs" $replicaSpecs) -}}
{{- $_ := set .component "template" $job -}}
{{- end -}}

{{- /*
torchwrap.pytorchjob.script: the training container's shell script. The training
operator sets WORLD_SIZE (the number of pods while spec.nprocPerNode is unset),
RANK, MASTER_ADDR and MASTER_PORT in every pod; torchrun starts one process per
GPU with a static rendezvous at the master.
*/ -}}
{{- define "torchwrap.pytorchjob.script" -}}
echo "Pod ${RANK} of ${WORLD_SIZE}; master at ${MASTER_ADDR}:${MASTER_PORT}"
{{- include "torchwrap.setupScript" . }}
{{- if .mainProgram }}
{{- $nproc := ternary (printf " --nproc_per_node=%d" (int .numGpusPerPod)) "" (gt (int .numGpusPerPod) 0) }}
echo "Starting torchrun on ${WORLD_SIZE} pods"
torchrun --nnodes=${WORLD_SIZE} --node_rank=${RANK}{{ $nproc }} --rdzv_id=101 --rdzv_endpoint="${MASTER_ADDR}:${MASTER_PORT}" {{ .mainProgram }}
{{- end }}
{{ end -}}
