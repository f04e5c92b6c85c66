{{- /*
The JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.12) as an AppWrapper component,
or alone with wrapper: none.

One replicated job, node, of one Indexed Job with numPods pods (parallelism =
completions = numPods), and network.enableDNSHostnames, so that JobSet's
headless service gives every pod a stable name:
<jobName>-node-0-<index>.<jobName> (the subdomain is the JobSet's name).
The generator sets in the training container what the training operator sets
in a PyTorchJob's (torchwrap.jobset.env), so the launch script is a
PyTorchJob's (torchwrap.torchrunScript). The Job's backoffLimit is 0 and the
JobSet has no failurePolicy: a failed pod fails the JobSet, and the AppWrapper
(retryLimit) retries the whole job. AppWrapper infers the podSets of a JobSet,
so the component declares none.
*/ -}}
{{- define "torchwrap.component.JobSet" -}}
{{- $v := .Values -}}
{{- $command := list "sh" "-c" (include "torchwrap.torchrunScript" $v) -}}
{{- $pod := dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" (include "torchwrap.containerName" $v) "command" $command "env" (include "torchwrap.jobset.env" $v | fromJson).env "out" $pod) -}}
{{- $_ := set $pod.spec "restartPolicy" $v.restartPolicy -}}
{{- $job := dict "parallelism" $v.numPods "completions" $v.numPods "completionMode" "Indexed" "backoffLimit" 0 "template" $pod -}}
{{- $replicatedJob := dict "name" "node" "replicas" 1 "template" (dict "spec" $job) -}}
{{- $spec := dict "network" (dict "enableDNSHostnames" true) "replicatedJobs" (list $replicatedJob) -}}
{{- include "torchwrap.job" (dict "ctx" . "apiVersion" "jobset.x-k8s.io/v1alpha2" "kind" "JobSet" "spec" $spec) -}}
{{- end -}}

{{- /*
torchwrap.jobset.env: what the training operator would set in a PyTorchJob's
pods, for the pods of the JobSet: RANK, the pod's completion index; WORLD_SIZE,
numPods; MASTER_ADDR, pod 0's stable name; MASTER_PORT, torchrun's default.
*/ -}}
{{- define "torchwrap.jobset.env" -}}
{{- $rank := dict "fieldRef" (dict "fieldPath" "metadata.annotations['batch.kubernetes.io/job-completion-index']") -}}
{{- toJson (dict "env" (list
    (dict "name" "RANK" "valueFrom" $rank)
    (dict "name" "WORLD_SIZE" "value" (toString (int .numPods)))
    (dict "name" "MASTER_ADDR" "value" (printf "%s-node-0-0.%s" .jobName .jobName))
    (dict "name" "MASTER_PORT" "value" "29500"))) -}}
{{- end -}}
