{{- /*
torchwrap.appwrapper: the one object this chart renders, an AppWrapper
(workload.codeflare.dev/v1beta2) with one component: the job of kind
.Values.jobKind, built by "torchwrap.component.<jobKind>" in that kind's own
file. Takes the settings as .Values and the chart's metadata as .Chart; the
generator's batch mode renders it for many settings at once.
*/ -}}
{{- define "torchwrap.appwrapper" -}}
{{- $v := .Values -}}
{{- $component := dict -}}
{{- $ctx := dict "Values" $v "customLabels" (include "torchwrap.customLabels" $v | fromJson) "storage" (include "torchwrap.storage" $v | fromJson).entries "component" $component -}}
{{- include "torchwrap.check" $ctx -}}
{{- include (printf "torchwrap.component.%s" $v.jobKind) $ctx -}}

{{- $annotations := dict "torchwrap.dev/generator-version" .Chart.Version -}}
{{- range $key := list "admissionGracePeriodDuration" "warmupGracePeriodDuration" "failureGracePeriodDuration" "retryPausePeriodDuration" "retryLimit" "forcefulDeletionGracePeriodDuration" "deletionOnFailureGracePeriodDuration" "successTTLDuration" -}}
{{- $value := index $v $key -}}
{{- if not (kindIs "invalid" $value) -}}
{{- $_ := set $annotations (printf "workload.codeflare.dev.appwrapper/%s" $key) (toString $value) -}}
{{- end -}}
{{- end -}}

{{- $labels := deepCopy $ctx.customLabels -}}
{{- with $v.queueName -}}
{{- $_ := set $labels "kueue.x-k8s.io/queue-name" . -}}
{{- end -}}
{{- $metadata := dict "name" $v.jobName "annotations" $annotations -}}
{{- with $labels -}}
{{- $_ := set $metadata "labels" . -}}
{{- end -}}
{{- with $v.namespace -}}
{{- $_ := set $metadata "namespace" . -}}
{{- end -}}

{{- $appwrapper := dict "apiVersion" "workload.codeflare.dev/v1beta2" "kind" "AppWrapper" "metadata" $metadata "spec" (dict "components" (list $component)) -}}
{{- $yaml := toYaml $appwrapper -}}
{{- if not $yaml -}}
{{- /* toYaml writes nothing, without an error, for text YAML cannot carry. */ -}}
{{- fail "a setting holds a control character (U+007F to U+009F, U+FFFE or U+FFFF) that the manifest cannot carry; remove it" -}}
{{- end -}}
{{ $yaml }}
{{- end -}}
