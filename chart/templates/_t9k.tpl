{{- /*
What T9k's two kinds (batch.tensorstack.dev/v1beta1) share: the spec fields
both have, and when they run mainProgram as a list of words, without a shell.
AppWrapper cannot infer the pods of these kinds, so their components declare
podSets: one per pod template, with its exact replica count.
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
torchwrap.wordsOfMainProgram: "true" when the job runs its mainProgram without
a shell, as a list of words: a DeepSpeedJob, and a PyTorchTrainingJob in T9k's
torchrun mode.
*/ -}}
{{- define "torchwrap.wordsOfMainProgram" -}}
{{- or (and (eq .jobKind "DeepSpeedJob") (not (empty .mainProgram))) (eq (include "torchwrap.t9kTorchrun" .) "true") -}}
{{- end -}}

{{- /*
torchwrap.t9kTorchrun: "true" when a PyTorchTrainingJob launches with T9k's own
torchrun: it has a mainProgram, no setupCommands and no workspace to unpack.
*/ -}}
{{- define "torchwrap.t9kTorchrun" -}}
{{- and (eq .jobKind "PyTorchTrainingJob") (not (empty .mainProgram)) (empty .setupCommands) (not .workspace) -}}
{{- end -}}
