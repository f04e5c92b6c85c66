{{- /*
T9k's DeepSpeedJob (batch.tensorstack.dev/v1beta1) as an AppWrapper component.

numPods workers; the training container is named worker and has no command:
the deepspeed launcher on the first worker reaches the others over ssh and
starts slotsPerWorker processes on each, running config.run: mainProgram split
into words, as a python script, a module or an executable (deepspeed.launch).
*/ -}}
{{- define "torchwrap.component.DeepSpeedJob" -}}
{{- $v := .Values -}}
{{- $ds := $v.deepspeed | default dict -}}
{{- $pod := dict -}}
{{- include "torchwrap.podTemplate" (dict "ctx" . "containerName" (include "torchwrap.containerName" $v) "out" $pod) -}}
{{- $spec := include "torchwrap.t9kSpec" $v | fromJson -}}
{{- $_ := set $spec "worker" (dict "replicas" $v.numPods "restartPolicy" $v.restartPolicy "template" $pod) -}}

{{- $run := list -}}
{{- with $v.mainProgram -}}
{{- $run = (include "torchwrap.words" . | fromJson).words -}}
{{- end -}}
{{- $config := dict "run" (dict ($ds.launch | default "python") $run) "slotsPerWorker" ($ds.slotsPerWorker | default (include "torchwrap.processesPerPod" $v | int)) -}}
{{- range $key := list "localRank" "autotune" "otherArgs" "customCommand" -}}
{{- if hasKey $ds $key -}}
{{- $_ := set $config $key (index $ds $key) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $spec "config" $config -}}
{{- if hasKey $ds "disableCustomEnv" -}}
{{- $_ := set $spec "disableCustomEnv" $ds.disableCustomEnv -}}
{{- end -}}

{{- include "torchwrap.job" (dict "ctx" . "apiVersion" "batch.tensorstack.dev/v1beta1" "kind" "DeepSpeedJob" "spec" $spec) -}}
{{- $_ := set .component "podSets" (list (dict "path" "template.spec.worker.template" "replicas" $v.numPods)) -}}
{{- end -}}
