{{- /*
The checks: the rules the JSON schema cannot express (comparing two values,
uniqueness across list items). Each rule is one define, torchwrap.check.<rule>,
which takes the render context and adds its problems to the context's list
.found.list: each {"path": "key.path", "message": "what is wrong; how to fix
it"}, with path "" for a problem of no one setting (data, no JSON: the checks
run on every render). torchwrap.problems runs them all, in order;
torchwrap.manifest fails with them, or lists them for the generator.
*/ -}}

{{- /* torchwrap.problems: sets .found.list to the problems of every rule, in this order. */ -}}
{{- define "torchwrap.problems" -}}
{{- $_ := set . "found" (dict "list" list) -}}
{{- range $rule := list "gpuLimit" "roceGdrResName" "storageClashes" "limitsBelowRequests" "deepspeedMounts" "elasticRange" "mainProgramWords" "tolerations" "podAnnotations" "customLabels" "podLabels" "exitCodes" "containerNames" "jobSetPodNames" "workspace" -}}
{{- include (print "torchwrap.check." $rule) $ -}}
{{- end -}}
{{- end -}}

{{- /* torchwrap.check.gpuLimit: a GPU limit must equal the request. */ -}}
{{- define "torchwrap.check.gpuLimit" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- if and (not (kindIs "invalid" $v.limitGpusPerPod)) (ne (int $v.limitGpusPerPod) (int $v.numGpusPerPod)) -}}
{{- $problems = append $problems (dict "path" "limitGpusPerPod" "message" (printf "%d differs from numGpusPerPod (%d), and Kubernetes requires a GPU limit to equal its request; remove limitGpusPerPod" (int $v.limitGpusPerPod) (int $v.numGpusPerPod))) -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /* torchwrap.check.roceGdrResName: the RDMA devices are not the accelerators. */ -}}
{{- define "torchwrap.check.roceGdrResName" -}}
{{- $v := .Values -}}
{{- if and (gt (int $v.numRoceGdr) 0) (eq (toString $v.roceGdrResName) (toString $v.gpuResName)) -}}
{{- $_ := set $.found "list" (append $.found.list (dict "path" "roceGdrResName" "message" (printf "%s is gpuResName, the accelerators numGpusPerPod asks for, not RDMA devices; set roceGdrResName to your cluster's RDMA resource (nvidia.com/roce_gdr, rdma/...), or remove numRoceGdr" $v.roceGdrResName))) -}}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.check.storageClashes: no two volumes of the pod (the user's and the
generator's own, .storage) share a name or a mount path.
*/ -}}
{{- define "torchwrap.check.storageClashes" -}}
{{- $problems := list -}}
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
{{- $problems = append $problems (dict "path" $key "message" (printf "%q is already the %s of %s; choose another" $value (ternary "name" "mount path" (eq $field "name")) $other.what)) -}}
{{- end -}}
{{- $_ := set $owners $value $entry -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.limitsBelowRequests: a CPU or memory limit is not below its
request, compared as quantities.
*/ -}}
{{- define "torchwrap.check.limitsBelowRequests" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- range $setting := list (list "limitCpusPerPod" "numCpusPerPod") (list "limitMemoryPerPod" "totalMemoryPerPod") -}}
{{- $limit := index $v (first $setting) -}}
{{- $request := index $v (last $setting) -}}
{{- if not (kindIs "invalid" $limit) -}}
{{- /* Refused when below the request by more than float64 rounding. */ -}}
{{- if lt (float64 (include "torchwrap.quantity" $limit)) (mulf (float64 (include "torchwrap.quantity" $request)) (subf 1 1e-14)) -}}
{{- $problems = append $problems (dict "path" (first $setting) "message" (printf "%v is below %s (%v), and Kubernetes refuses a limit below its request; raise it, or remove it to use the request" $limit (last $setting) $request)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.deepspeedMounts: a DeepSpeedJob's mounts do not hide what its
launcher reaches the other workers with.
*/ -}}
{{- define "torchwrap.check.deepspeedMounts" -}}
{{- $problems := list -}}
{{- if eq .Values.jobKind "DeepSpeedJob" -}}
{{- range $entry := .storage -}}
{{- $mount := trimSuffix "/" $entry.mount.mountPath -}}
{{- $hidden := list -}}
{{- range $reserved := list "/root/.ssh" "/t9k/hostfile" "/root/.deepspeed_env" -}}
{{- if or (eq $mount $reserved) (hasPrefix (print $mount "/") $reserved) (hasPrefix (print $reserved "/") $mount) -}}
{{- $hidden = append $hidden $reserved -}}
{{- end -}}
{{- end -}}
{{- with $hidden -}}
{{- $problems = append $problems (dict "path" ($entry.pathKey | default "") "message" (printf "%q would hide %s, which the DeepSpeed launcher needs to reach the other workers; mount %s elsewhere" $entry.mount.mountPath (join " and " .) $entry.what)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /* torchwrap.check.elasticRange: elastic minPods and maxPods around numPods. */ -}}
{{- define "torchwrap.check.elasticRange" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- with $v.elastic -}}
{{- if gt (int .minPods) (int $v.numPods) -}}
{{- $problems = append $problems (dict "path" "elastic.minPods" "message" (printf "%d is more than numPods (%d), the pods the job starts with; lower minPods or raise numPods" (int .minPods) (int $v.numPods))) -}}
{{- end -}}
{{- if lt (int .maxPods) (int $v.numPods) -}}
{{- $problems = append $problems (dict "path" "elastic.maxPods" "message" (printf "%d is less than numPods (%d), the pods the job starts with; raise maxPods or lower numPods" (int .maxPods) (int $v.numPods))) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.mainProgramWords: a mainProgram run as a list of words splits
into words (torchwrap.words): no unclosed quote, no final backslash.
*/ -}}
{{- define "torchwrap.check.mainProgramWords" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- if eq (include "torchwrap.wordsOfMainProgram" $v) "true" -}}
{{- with (include "torchwrap.words" $v.mainProgram | fromJson).error -}}
{{- $problems = append $problems (dict "path" "mainProgram" "message" (printf "%s; it is split into words as a shell would (without running one), so close every quote and escape a final backslash" .)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /* torchwrap.check.tolerations: each toleration's fields fit together as Kubernetes requires. */ -}}
{{- define "torchwrap.check.tolerations" -}}
{{- $problems := list -}}
{{- range $i, $t := .Values.tolerations -}}
{{- $operator := $t.operator | default "Equal" -}}
{{- if and (not $t.key) (ne $operator "Exists") -}}
{{- $problems = append $problems (dict "path" (printf "tolerations[%d].operator" $i) "message" "a toleration without key tolerates every taint and needs operator Exists; set operator: Exists, or a key") -}}
{{- end -}}
{{- if and (eq $operator "Exists") $t.value -}}
{{- $problems = append $problems (dict "path" (printf "tolerations[%d].value" $i) "message" "operator Exists matches any value; remove the value, or use operator: Equal") -}}
{{- end -}}
{{- if and (hasKey $t "tolerationSeconds") (ne (toString $t.effect) "NoExecute") -}}
{{- $problems = append $problems (dict "path" (printf "tolerations[%d].tolerationSeconds" $i) "message" "applies to effect NoExecute only; set effect: NoExecute, or remove tolerationSeconds") -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.podAnnotations: podAnnotations do not set the annotations the
generator sets (torchwrap.ownPodAnnotations: multiNicNetworkName's network,
topology's placement).
*/ -}}
{{- define "torchwrap.check.podAnnotations" -}}
{{- $problems := list -}}
{{- with .Values.podAnnotations -}}
{{- $own := (include "torchwrap.ownPodAnnotations" $.Values | fromJson).by -}}
{{- range $key := keys . | sortAlpha -}}
{{- with index $own $key -}}
{{- $problems = append $problems (dict "path" (printf "podAnnotations[%q]" $key) "message" (printf "is set by %s; remove one of the two" .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.customLabels: customLabels name each key once, and no label
that a setting sets where customLabels go: Kueue's (torchwrap.kueueLabels)
on the job's top object, autopilot's on the pods. The setting's value would
win without a word.
*/ -}}
{{- define "torchwrap.check.customLabels" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- $kueue := dict -}}
{{- include "torchwrap.kueueLabels" (dict "Values" $v "labels" $kueue) -}}
{{- $setBy := dict -}}
{{- range $key, $setting := dict "kueue.x-k8s.io/queue-name" "queueName" "kueue.x-k8s.io/priority-class" "workloadPriorityClass" -}}
{{- if hasKey $kueue $key -}}
{{- $_ := set $setBy $key $setting -}}
{{- end -}}
{{- end -}}
{{- range $key := concat (list "autopilot") ($v.autopilotHealthChecks | default list) -}}
{{- if $v.autopilotHealthChecks -}}
{{- $_ := set $setBy $key "autopilotHealthChecks" -}}
{{- end -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $i, $label := $v.customLabels -}}
{{- $path := printf "customLabels[%d].key" $i -}}
{{- if hasKey $setBy $label.key -}}
{{- $setting := index $setBy $label.key -}}
{{- $problems = append $problems (dict "path" $path "message" (printf "%s is the label %s sets (%s would win); remove this entry and set %s" $label.key $setting $setting $setting)) -}}
{{- else if hasKey $seen $label.key -}}
{{- $problems = append $problems (dict "path" $path "message" (printf "%s is the key of customLabels[%d] too, and the last value would win; keep one" $label.key (index $seen $label.key))) -}}
{{- end -}}
{{- $_ := set $seen $label.key $i -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /* torchwrap.check.podLabels: podLabels do not set the labels the generator puts on every pod. */ -}}
{{- define "torchwrap.check.podLabels" -}}
{{- $problems := list -}}
{{- with .Values.podLabels -}}
{{- $ownLabels := include "torchwrap.ownPodLabels" $ | fromJson -}}
{{- range $key := keys . | sortAlpha -}}
{{- if hasKey $ownLabels $key -}}
{{- $problems = append $problems (dict "path" (printf "podLabels[%q]" $key) "message" "is a label customLabels or autopilotHealthChecks set already; remove it from podLabels") -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /* torchwrap.check.exitCodes: no exit code is both retryable and terminal. */ -}}
{{- define "torchwrap.check.exitCodes" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- range $i, $code := $v.retryableExitCodes -}}
{{- if has $code ($v.terminalExitCodes | default list) -}}
{{- $problems = append $problems (dict "path" (printf "retryableExitCodes[%d]" $i) "message" (printf "%v is in terminalExitCodes too; keep it in one of the two" $code)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.containerNames: no two containers of the pod share a name (the
training container's, torchwrap.containerName, and the init containers').
*/ -}}
{{- define "torchwrap.check.containerNames" -}}
{{- $problems := list -}}
{{- $seen := dict (include "torchwrap.containerName" .Values) "the training container" -}}
{{- range $i, $c := .Values.initContainers -}}
{{- with $owner := index $seen $c.name -}}
{{- $problems = append $problems (dict "path" (printf "initContainers[%d].name" $i) "message" (printf "%q is already the name of %s, and Kubernetes requires the containers of a pod to have names of their own; choose another" $c.name $owner)) -}}
{{- else -}}
{{- $_ := set $seen $c.name (printf "initContainers[%d]" $i) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
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
torchwrap.check.jobSetPodNames: JobSet names the pods of a JobSet
<jobName>-<replicated job>-<job index>-<pod index>-<5 random characters>, and
its webhook refuses a JobSet whose longest pod name could pass 63 characters.
A JobSet's one replicated job is node, and so is the one of the JobSet the
Trainer makes of a TrainJob, named as the TrainJob, on torch-distributed.
*/ -}}
{{- define "torchwrap.check.jobSetPodNames" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- if has $v.jobKind (list "JobSet" "TrainJob") -}}
{{- $longest := printf "%s-node-0-%d-abcde" $v.jobName (sub (int $v.numPods) 1) -}}
{{- if gt (len $longest) 63 -}}
{{- $max := sub (len $v.jobName) (sub (len $longest) 63) -}}
{{- $problems = append $problems (dict "path" "jobName" "message" (printf "%q has %d characters, too many for a %s of %d pods: JobSet names the pods <jobName>-node-0-<index>-<5 random characters>, in at most 63 characters; use at most %d" $v.jobName (len $v.jobName) $v.jobKind (int $v.numPods) $max)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $.found "list" (concat $.found.list $problems) -}}
{{- end -}}

{{- /*
torchwrap.check.workspace: a workspace is unpacked by the launch script, so
the kinds that run none cannot take one: a DeepSpeedJob (its launcher starts
mainProgram over ssh) and an elastic PyTorchTrainingJob (T9k's torchrun runs
mainProgram itself).
*/ -}}
{{- define "torchwrap.check.workspace" -}}
{{- $v := .Values -}}
{{- if $v.workspace -}}
{{- $message := "" -}}
{{- if eq $v.jobKind "DeepSpeedJob" -}}
{{- $message = "a DeepSpeedJob cannot take a workspace (--workspace): its launcher starts mainProgram on each worker over ssh, with no script to unpack it first; ship the code in the image, or use a PyTorchJob" -}}
{{- else if and (eq $v.jobKind "PyTorchTrainingJob") $v.elastic -}}
{{- $message = "an elastic PyTorchTrainingJob cannot take a workspace (--workspace): T9k's torchrun runs mainProgram itself, with no script to unpack it first; ship the code in the image, or remove elastic" -}}
{{- end -}}
{{- with $message -}}
{{- $_ := set $.found "list" (append $.found.list (dict "path" "" "message" .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
