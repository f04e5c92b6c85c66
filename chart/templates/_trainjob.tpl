{{- /*
Kubeflow Trainer's TrainJob (trainer.kubeflow.org/v1alpha1, Trainer v2.3),
always alone (wrapper: none): AppWrapper cannot wrap it.

It runs on a ClusterTrainingRuntime (trainingRuntime, torch-distributed unless
set), whose replicated job node runs the training container node. The
TrainJob gives the container's image, command, env and resources in
spec.trainer, with numNodes and numProcPerNode; everything else of the pod
template goes in one runtime patch (spec.runtimePatches, manager
torchwrap.dev/generator) of the node job's pod template: the pod's labels and
annotations, the fields of the PodSpec that a patch may set (its security context
among them),
and the container's volume mounts and security context. The schema refuses
the settings a patch cannot carry. Trainer sets PET_NNODES, PET_NPROC_PER_NODE,
PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT in the container; the
launch script hands them to torchrun.
*/ -}}
{{- define "torchwrap.component.TrainJob" -}}
{{- $v := .Values -}}
{{- $command := list "sh" "-c" (include "torchwrap.trainjob.script" $v) -}}
{{- $pod := dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" (include "torchwrap.containerName" $v) "command" $command "out" $pod) -}}
{{- $container := first $pod.spec.containers -}}

{{- $trainer := dict "image" $container.image "command" $container.command "numNodes" $v.numPods "numProcPerNode" (include "torchwrap.processesPerPod" $v | int) "resourcesPerNode" $container.resources -}}
{{- with $container.env -}}
{{- $_ := set $trainer "env" . -}}
{{- end -}}

{{- $containerPatch := dict "name" $container.name -}}
{{- range $field := list "volumeMounts" "securityContext" -}}
{{- with index $container $field -}}
{{- $_ := set $containerPatch $field . -}}
{{- end -}}
{{- end -}}
{{- $podSpec := dict -}}
{{- range $field := list "serviceAccountName" "volumes" "imagePullSecrets" "securityContext" "nodeSelector" "affinity" "tolerations" "terminationGracePeriodSeconds" -}}
{{- if hasKey $pod.spec $field -}}
{{- $_ := set $podSpec $field (index $pod.spec $field) -}}
{{- end -}}
{{- end -}}
{{- if gt (len $containerPatch) 1 -}}
{{- $_ := set $podSpec "containers" (list $containerPatch) -}}
{{- end -}}
{{- $podPatch := dict "spec" $podSpec -}}
{{- with $pod.metadata -}}
{{- $_ := set $podPatch "metadata" . -}}
{{- end -}}
{{- $jobPatch := dict "name" "node" "template" (dict "spec" (dict "template" $podPatch)) -}}
{{- $patch := dict "manager" "torchwrap.dev/generator" "trainingRuntimeSpec" (dict "template" (dict "spec" (dict "replicatedJobs" (list $jobPatch)))) -}}

{{- $runtime := dict "name" ($v.trainingRuntime | default "torch-distributed") "apiGroup" "trainer.kubeflow.org" "kind" "ClusterTrainingRuntime" -}}
{{- $spec := dict "runtimeRef" $runtime "trainer" $trainer "runtimePatches" (list $patch) -}}
{{- include "torchwrap.job" (dict "ctx" . "apiVersion" "trainer.kubeflow.org/v1alpha1" "kind" "TrainJob" "spec" $spec) -}}
{{- end -}}

{{- /*
torchwrap.trainjob.script: the training container's shell script. torchrun
meets the other pods at the master Trainer names, with the rank and counts
Trainer sets (the PET_ variables, which torchrun would also read by itself).
*/ -}}
{{- define "torchwrap.trainjob.script" -}}
{{- include "torchwrap.launchScript" (dict
    "Values" .
    "options" (list "--nnodes=${PET_NNODES}" "--nproc_per_node=${PET_NPROC_PER_NODE}" "--node_rank=${PET_NODE_RANK}")
    "maxRestarts" true
    "endpoint" `"${PET_MASTER_ADDR}:${PET_MASTER_PORT}"`
    "announce" "Starting torchrun on ${PET_NNODES} pods"
    "opening" `echo "Pod ${PET_NODE_RANK} of ${PET_NNODES}; master at ${PET_MASTER_ADDR}:${PET_MASTER_PORT}"`) -}}
{{- end -}}
