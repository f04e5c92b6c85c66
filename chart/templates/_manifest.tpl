{{- /*
The manifest: the one object this chart renders, built as data and written
once with toYaml, or the problems that refuse the settings.

Every helper builds data (dicts and lists): small ones hand it back as JSON,
which the caller reads with fromJson; those that build a big part fill a dict
their caller passes in (.component, .out), to spare a JSON round trip. No
settings string is ever spliced into YAML text.

Most helpers take the render context built in torchwrap.manifest:
  .Values        the settings
  .customLabels  the customLabels as a map
  .storage       the volumes and their mounts, in pod order (torchwrap.storage)
  .component     the dict that torchwrap.component.<jobKind> fills
  .found         {"list": the problems}, which torchwrap.problems sets

The settings in .Values carry one value that is not a setting: workspace, the
folder the generator packed to ship with the job (torchwrap.manifest's
.workspace), which the chart alone never has.
*/ -}}

{{- /*
torchwrap.manifest: by default an AppWrapper (workload.codeflare.dev/v1beta2)
with one component: the job of kind .Values.jobKind, built by
"torchwrap.component.<jobKind>" in that kind's own file. With wrapper: none,
that job alone. Takes the settings as .Values and the chart's metadata as
.Chart; the generator's batch mode renders it for many settings at once.
With .workspace (the generator's render of --workspace: the ConfigMaps that
carry the packed folder, its digest, files, bytes and folder), the pods unpack
it into their working folder, and the object's annotations say which it is.
When the checks (torchwrap.problems) find problems, it renders no object: it
fails with them, one "path: message" a line, as Helm users see them; or, with
.listProblems true (the generator's own templates), it writes them as data
(torchwrap.refuse).
*/ -}}
{{- define "torchwrap.manifest" -}}
{{- $v := dict -}}
{{- include "torchwrap.settings" (dict "Values" .Values "out" $v) -}}
{{- with .workspace -}}
{{- $_ := set $v "workspace" . -}}
{{- end -}}
{{- $component := dict -}}
{{- $ctx := dict "Values" $v "customLabels" (include "torchwrap.customLabels" $v | fromJson) "storage" (include "torchwrap.storage" $v | fromJson).entries "component" $component -}}
{{- include "torchwrap.problems" $ctx -}}
{{- $problems := $ctx.found.list -}}
{{- if $problems -}}
{{- include "torchwrap.refuse" (dict "problems" $problems "listProblems" .listProblems) -}}
{{- else -}}
{{- include (printf "torchwrap.component.%s" $v.jobKind) $ctx -}}

{{- $annotations := dict "torchwrap.dev/generator-version" .Chart.Version -}}
{{- with $workspace := $v.workspace -}}
{{- $_ := set $annotations "torchwrap.dev/workspace" .digest -}}
{{- range $key := list "files" "bytes" "folder" -}}
{{- $_ := set $annotations (printf "torchwrap.dev/workspace-%s" $key) (toString (index $workspace $key)) -}}
{{- end -}}
{{- $_ := set $annotations "torchwrap.dev/workspace-parts" (toString (len .configMaps)) -}}
{{- end -}}
{{- $labels := deepCopy $ctx.customLabels -}}
{{- $object := dict -}}
{{- include "torchwrap.kueueLabels" (dict "Values" $v "labels" $labels) -}}
{{- if eq $v.wrapper "none" -}}
{{- $object = $component.template -}}
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
{{- $object = dict "apiVersion" "workload.codeflare.dev/v1beta2" "kind" "AppWrapper" "spec" (dict "components" (list $component)) -}}
{{- end -}}

{{- $metadata := dict "name" $v.jobName "annotations" $annotations -}}
{{- with $labels -}}
{{- $_ := set $metadata "labels" . -}}
{{- end -}}
{{- with $v.namespace -}}
{{- $_ := set $metadata "namespace" . -}}
{{- end -}}
{{- if $v.helmHook -}}
{{- $_ := set $annotations "helm.sh/hook" "post-install,post-upgrade" -}}
{{- $_ := set $annotations "helm.sh/hook-delete-policy" "before-hook-creation" -}}
{{- end -}}
{{- $_ := set $object "metadata" $metadata -}}
{{- $yaml := toYaml $object -}}
{{- if and $yaml $v.helmHook -}}
{{ include "torchwrap.helmHook" (dict "Values" $v "job" $object "yaml" $yaml "releaseNamespace" .releaseNamespace) }}
{{- else if $yaml -}}
{{ $yaml }}
{{- else -}}
{{- /* toYaml writes nothing, without an error, for text YAML cannot carry. */ -}}
{{- $problem := dict "path" "" "message" "a setting holds a control character (U+007F to U+009F, U+FFFE or U+FFFF) that the manifest cannot carry; remove it" -}}
{{- include "torchwrap.refuse" (dict "problems" (list $problem) "listProblems" .listProblems) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.helmHook: the job of helmHook: true (.job, and its YAML .yaml), a
Helm hook, after the ConfigMap jobName-helm-hook that records its digest
(without the annotation of the chart's version). Helm
creates the ConfigMap with the release and runs the hook after it. The job is
left out when that ConfigMap, as the cluster holds it (Helm's lookup, in helm
install and upgrade), records the same digest: it was created for these
settings already, and may have finished and been deleted since. Without a
cluster (helm template, the generator, Argo CD) lookup finds nothing, and the
job is always there. The ConfigMap is placed where the job is: its namespace,
or the release's (.releaseNamespace).
*/ -}}
{{- define "torchwrap.helmHook" -}}
{{- $metadata := dict "name" (printf "%s-helm-hook" .Values.jobName) -}}
{{- with .job.metadata.namespace -}}
{{- $_ := set $metadata "namespace" . -}}
{{- end -}}
{{- /* The job's version annotation aside: a new chart that renders the same job runs nothing again. */ -}}
{{- $unversioned := deepCopy .job -}}
{{- $_ := unset $unversioned.metadata.annotations "torchwrap.dev/generator-version" -}}
{{- $digest := toYaml $unversioned | sha256sum -}}
{{- $recorded := lookup "v1" "ConfigMap" (.job.metadata.namespace | default .releaseNamespace | default "") $metadata.name -}}
{{- toYaml (dict "apiVersion" "v1" "kind" "ConfigMap" "metadata" $metadata "data" (dict "job" (printf "%s/%s" .job.kind .job.metadata.name) "digest" $digest)) }}
{{- if ne (dig "data" "digest" "" $recorded) $digest }}
---
{{ .yaml }}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.refuse: refuses the settings for the problems .problems (a list of
{"path", "message"}). By default it fails with them, one a line, each
"path: message" (the message alone when path is ""). With .listProblems true,
it writes the problems document instead, which the generator reads: the line
"# torchwrap/generator problems", then the problems as one line of JSON.
*/ -}}
{{- define "torchwrap.refuse" -}}
{{- if .listProblems -}}
# torchwrap/generator problems
{{ toJson .problems }}
{{- else -}}
{{- $lines := list -}}
{{- range .problems -}}
{{- $lines = append $lines (ternary (printf "%s: %s" .path .message) .message (not (empty .path))) -}}
{{- end -}}
{{- fail (join "\n" $lines) -}}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.settings: fills the dict .out with the settings .Values, and gives
those whose default follows jobKind (torchwrap.kindDefaults) the kind's
default when they are left out, or left empty (null) where null is none of
their defaults: wrapper: null is unset, priority: null leaves the PriorityClass
out. .Values is left as it is.
*/ -}}
{{- define "torchwrap.settings" -}}
{{- $v := .out -}}
{{- range $key, $value := .Values -}}
{{- $_ := set $v $key $value -}}
{{- end -}}
{{- $kind := toString $v.jobKind -}}
{{- range $key, $defaults := include "torchwrap.kindDefaults" . | fromJson -}}
{{- if or (not (hasKey $v $key)) (and (kindIs "invalid" (index $v $key)) (not (has nil (values $defaults)))) -}}
{{- $_ := set $v $key (ternary (index $defaults $kind) (index $defaults "") (hasKey $defaults $kind)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
torchwrap.kueueLabels: Kueue's labels for the object it admits, added to the
dict .labels: the LocalQueue and the WorkloadPriorityClass. Kueue admits an
AppWrapper, and a bare job of the kinds it integrates (PyTorchJob, JobSet,
TrainJob); a bare T9k job gets none.
*/ -}}
{{- define "torchwrap.kueueLabels" -}}
{{- if or (ne .Values.wrapper "none") (has .Values.jobKind (list "PyTorchJob" "JobSet" "TrainJob")) -}}
{{- with .Values.queueName -}}
{{- $_ := set $.labels "kueue.x-k8s.io/queue-name" . -}}
{{- end -}}
{{- with .Values.workloadPriorityClass -}}
{{- $_ := set $.labels "kueue.x-k8s.io/priority-class" . -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* torchwrap.customLabels: the customLabels list as a map of label keys to values. */ -}}
{{- define "torchwrap.customLabels" -}}
{{- $labels := dict -}}
{{- range .customLabels -}}
{{- $_ := set $labels .key .value -}}
{{- end -}}
{{- toJson $labels -}}
{{- end -}}

{{- /*
torchwrap.job: sets the component's template (.ctx.component) to the job a
kind builds: its .apiVersion, .kind and .spec, with the metadata every kind's
job has, the job's name and the customLabels. Takes the render context as .ctx.
*/ -}}
{{- define "torchwrap.job" -}}
{{- $metadata := dict "name" .ctx.Values.jobName -}}
{{- with .ctx.customLabels -}}
{{- $_ := set $metadata "labels" . -}}
{{- end -}}
{{- $_ := set .ctx.component "template" (dict "apiVersion" .apiVersion "kind" .kind "metadata" $metadata "spec" .spec) -}}
{{- end -}}
