{{- /*
The Kubeflow PyTorchJob (kubeflow.org/v1) as an AppWrapper component.

Master has one replica, Worker numPods-1 and no entry at all for a one-pod job
(the PyTorchJob webhook refuses Worker replicas of 0). The AppWrapper controller
infers the podSets of a PyTorchJob by itself, so the component declares none.
spec.nprocPerNode is never set: the operator would multiply WORLD_SIZE by it,
and the script reads WORLD_SIZE as the number of pods.
*/ -}}
{{- define "torchwrap.component.PyTorchJob" -}}
{{- $v := .Values -}}
{{- $command := list "sh" "-c" (include "torchwrap.pytorchjob.script" $v) -}}
{{- $pod := dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" (include "torchwrap.containerName" $v) "command" $command "out" $pod) -}}
{{- $replicaSpecs := dict "Master" (dict "replicas" 1 "restartPolicy" $v.restartPolicy "template" $pod) -}}
{{- if gt (int $v.numPods) 1 -}}
{{- $_ := set $replicaSpecs "Worker" (dict "replicas" (sub (int $v.numPods) 1) "restartPolicy" $v.restartPolicy "template" $pod) -}}
{{- end -}}
{{- $spec := dict "pytorchReplicaSpecs" $replicaSpecs -}}
{{- with $v.elastic -}}
{{- $policy := dict "minReplicas" .minPods "maxReplicas" .maxPods "rdzvBackend" "c10d" -}}
{{- with $v.torchrun -}}
{{- if hasKey . "maxRestarts" -}}
{{- $_ := set $policy "maxRestarts" .maxRestarts -}}
{{- end -}}
{{- end -}}
{{- $_ := set $spec "elasticPolicy" $policy -}}
{{- end -}}
{{- include "torchwrap.job" (dict "ctx" . "apiVersion" "kubeflow.org/v1" "kind" "PyTorchJob" "spec" $spec) -}}
{{- end -}}

{{- /*
torchwrap.pytorchjob.script: the training container's shell script. The training
operator sets WORLD_SIZE (the number of pods, as spec.nprocPerNode stays unset),
RANK, MASTER_ADDR and MASTER_PORT in every pod. torchrun starts one process per
GPU (or torchrun.nprocPerNode) and meets the other pods:
- static rendezvous (the default): each pod's rank is RANK;
- c10d rendezvous (torchrun.rdzvBackend): at the master, which assigns ranks;
- elastic: c10d at the endpoint the operator sets from elasticPolicy
  (PET_RDZV_ENDPOINT), between PET_NNODES=min:max pods; torchrun reads the
  restart count from PET_MAX_RESTARTS.
The rest of the script is torchwrap.launchScript's.
*/ -}}
{{- define "torchwrap.pytorchjob.script" -}}
{{- $torchrun := .torchrun | default dict -}}
{{- $static := and (not .elastic) (ne (toString $torchrun.rdzvBackend) "c10d") -}}
{{- $options := list -}}
{{- $endpoint := `"${MASTER_ADDR}:${MASTER_PORT}"` -}}
{{- $announce := "Starting torchrun on ${WORLD_SIZE} pods" -}}
{{- if .elastic -}}
{{- $options = list "--nnodes=${PET_NNODES}" "--rdzv_backend=c10d" -}}
{{- $endpoint = `"${PET_RDZV_ENDPOINT}"` -}}
{{- $announce = "Starting elastic torchrun on ${PET_NNODES} (min:max) pods" -}}
{{- else if $static -}}
{{- $options = list "--nnodes=${WORLD_SIZE}" "--node_rank=${RANK}" -}}
{{- else -}}
{{- $options = list "--nnodes=${WORLD_SIZE}" "--rdzv_backend=c10d" -}}
{{- end -}}
{{- if or $torchrun.nprocPerNode (gt (int .numGpusPerPod) 0) -}}
{{- $options = append $options (printf "--nproc_per_node=%s" (include "torchwrap.processesPerPod" .)) -}}
{{- end -}}
{{- $options = append $options (printf "--rdzv_id=%s" (ternary "101" .jobName $static)) -}}
{{- include "torchwrap.launchScript" (dict "Values" . "options" $options "maxRestarts" (not .elastic) "endpoint" $endpoint "announce" $announce) -}}
{{- end -}}
