{{- /*
The Kubeflow PyTorchJob (kubeflow.org/v1) as an AppWrapper component.

Master has one replica, Worker numPods-1 and no entry at all for a one-pod job
(the PyTorchJob webhook refuses Worker replicas of 0). The AppWrapper controller
infers the podSets of a PyTorchJob by itself, so the component declares none.
spec.nprocPerNode is never set: the operator would multiply WORLD_SIZE by it,
and the script (torchwrap.torchrunScript) reads WORLD_SIZE as the number of pods.
*/ -}}
{{- define "torchwrap.component.PyTorchJob" -}}
{{- $v := .Values -}}
{{- $command := list "sh" "-c" (include "torchwrap.torchrunScript" $v) -}}
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
