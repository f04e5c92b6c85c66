{{- /*
torchwrap.manifest: the one object this chart renders. By default an AppWrapper
(workload.codeflare.dev/v1beta2) with one component: the job of kind
.Values.jobKind, built by "torchwrap.component.<jobKind>" in that kind's own
file. With wrapper: none, that job alone. Takes the settings as .Values and the
chart's metadata as .Chart; the generator's batch mode renders it for many
settings at once.
*/ -}}
{{- define "torchwrap.manifest" -}}
{{- $v := .Values -}}
{{- $component := dict -}}
{{- $ctx := dict "Values" $v "customLabels" (include "torchwrap.customLabels" $v | fromJson) "storage" (include "torchwrap.storage" $v | fromJson).entries "component" $component -}}
{{- include "torchwrap.check" $ctx -}}
{{- include (printf "torchwrap.component.%s" $v.jobKind) $ctx -}}

{{- $annotations := dict "torchwrap.dev/generator-version" .Chart.Version -}}
{{- $labels := deepCopy $ctx.customLabels -}}
{{- $object := dict -}}
{{- if eq $v.wrapper "none" -}}
{{- $object = $component.template -}}
{{- if eq $v.jobKind "PyTorchJob" -}}
{{- /* Kueue's own PyTorchJob integration reads these labels on the job. */ -}}
{{- include "torchwrap.kueueLabels" (dict "Values" $v "labels" $labels) -}}
{{- end -}}
{{- else -}}
{{- range $key := list "admissionGracePeriodDuration" "warmupGracePeriodDuration" "failureGracePeriodDuration" "retryPausePeriodDuration" "retryLimit" "forcefulDeletionGracePeriodDuration" "deletionOnFailureGracePeriodDuration" "successTTLDuration" -}}
{{- $value := index $v $key -}}
{{- if not (kindIs "invalid" $value) -}}
{{- $_ := set $annotations (printf "workload.codeflare.dev.appwrapper/%s" $key) (toString $value) -}}
{{- end -}}
{{- end -}}
{{- range $key := list "terminalExitCodes" "retryableExitCodes" -}}
{{- with index $v $key -}}
{{- $_ := set $annotations (printf "workload.codeflare.dev.appwrapper/%s" $key) (join "," .) -}}
{{- end -}}
{{- end -}}
{{- include "torchwrap.kueueLabels" (dict "Values" $v "labels" $labels) -}}
{{- $object = dict "apiVersion" "workload.codeflare.dev/v1beta2" "kind" "AppWrapper" "spec" (dict "components" (list $component)) -}}
{{- end -}}

{{- $metadata := dict "name" $v.jobName "annotations" $annotations -}}
{{- with $labels -}}
{{- $_ := set $metadata "labels" . -}}
{{- end -}}
{{- with $v.namespace -}}
{{- $_ := set $metadata "namespace" . -}}
{{- end -}}
{{- $_ := set $object "metadata" $metadata -}}
{{- $yaml := toYaml $object -}}
{{- if not $yaml -}}
{{- /* toYaml writes nothing, without an error, for text YAML cannot carry. */ -}}
{{- fail "a setting holds a control character (U+007F to U+009F, U+FFFE or U+FFFF) that the manifest cannot carry; remove it" -}}
{{- end -}}
{{ $yaml }}
{{- end -}}

{{- /*
torchwrap.kueueLabels: Kueue's labels for the object it admits, added to the
dict .labels: the LocalQueue and the WorkloadPriorityClass.
*/ -}}
{{- define "torchwrap.kueueLabels" -}}
{{- with .Values.queueName -}}
{{- $_ := set $.labels "kueue.x-k8s.io/queue-name" . -}}
{{- end -}}
{{- with .Values.workloadPriorityClass -}}
{{- $_ := set $.labels "kueue.x-k8s.io/priority-class" . -}}
{{- end -}}
{{- end -}}
