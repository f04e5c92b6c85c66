{{- /*
What T9k's two kinds (batch.tensorstack.dev/v1beta1) share. AppWrapper cannot
infer the pods of these kinds, so their components declare podSets: one per
pod template, with its exact replica count.
*/ -}}

{{- /*
torchwrap.t9kSpec: the spec fields both T9k kinds have, from the settings:
elastic, runMode, runPolicy and scheduler.
*/ -}}
{{- define "torchwrap.t9kSpec" -}}
{{- $spec := dict -}}
{{- with .elastic -}}
{{- $_ := set $spec "elastic" (dict "enabled" true "minReplicas" .minPods "maxReplicas" .maxPods "expectedReplicas" $.numPods) -}}
{{- end -}}
{{- with .runMode -}}
{{- $_ := set $spec "runMode" . -}}
{{- end -}}
{{- with .runPolicy -}}
{{- $_ := set $spec "runPolicy" . -}}
{{- end -}}
{{- with .t9kScheduler -}}
{{- $_ := set $spec "scheduler" (dict "t9kScheduler" .) -}}
{{- end -}}
{{- toJson $spec -}}
{{- end -}}

{{- /*
torchwrap.processesPerPod: the processes torchrun starts in each pod:
torchrun.nprocPerNode, or one per GPU, one without GPUs.
*/ -}}
{{- define "torchwrap.processesPerPod" -}}
{{- int ((.torchrun | default dict).nprocPerNode | default (max 1 (int .numGpusPerPod))) -}}
{{- end -}}
