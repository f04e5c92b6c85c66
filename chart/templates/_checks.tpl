{{- /*
The checks: the rules the JSON schema cannot express (comparing two values,
uniqueness across list items), and what they need.
*/ -}}

{{- /*
torchwrap.check: the rules the JSON schema cannot express. All problems are
reported at once, one per line, each as "key.path: what is wrong; how to fix it".
*/ -}}
{{- define "torchwrap.check" -}}
{{- $v := .Values -}}
{{- $problems := list -}}
{{- if and (not (kindIs "invalid" $v.limitGpusPerPod)) (ne (int $v.limitGpusPerPod) (int $v.numGpusPerPod)) -}}
{{- $problems = append $problems (printf "limitGpusPerPod: %d differs from numGpusPerPod (%d), and Kubernetes requires a GPU limit to equal its request; remove limitGpusPerPod" (int $v.limitGpusPerPod) (int $v.numGpusPerPod)) -}}
{{- end -}}
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
{{- $problems = append $problems (printf "%s: %q is already the %s of %s; choose another" $key $value (ternary "name" "mount path" (eq $field "name")) $other.what) -}}
{{- end -}}
{{- $_ := set $owners $value $entry -}}
{{- end -}}
{{- end -}}
{{- range $setting := list (list "limitCpusPerPod" "numCpusPerPod") (list "limitMemoryPerPod" "totalMemoryPerPod") -}}
{{- $limit := index $v (first $setting) -}}
{{- $request := index $v (last $setting) -}}
{{- if not (kindIs "invalid" $limit) -}}
{{- /* Refused when below the request by more than float64 rounding. */ -}}
{{- if lt (float64 (include "torchwrap.quantity" $limit)) (mulf (float64 (include "torchwrap.quantity" $request)) (subf 1 1e-14)) -}}
{{- $problems = append $problems (printf "%s: %v is below %s (%v), and Kubernetes refuses a limit below its request; raise it, or remove it to use the request" (first $setting) $limit (last $setting) $request) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq $v.jobKind "DeepSpeedJob" -}}
{{- range $entry := .storage -}}
{{- $mount := trimSuffix "/" $entry.mount.mountPath -}}
{{- $hidden := list -}}
{{- range $reserved := list "/root/.ssh" "/t9k/hostfile" "/root/.deepspeed_env" -}}
{{- if or (eq $mount $reserved) (hasPrefix (print $mount "/") $reserved) (hasPrefix (print $reserved "/") $mount) -}}
{{- $hidden = append $hidden $reserved -}}
{{- end -}}
{{- end -}}
{{- with $hidden -}}
{{- $problems = append $problems (printf "%s: %q would hide %s, which the DeepSpeed launcher needs to reach the other workers; mount %s elsewhere" $entry.pathKey $entry.mount.mountPath (join " and " .) $entry.what) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $v.elastic -}}
{{- if gt (int .minPods) (int $v.numPods) -}}
{{- $problems = append $problems (printf "elastic.minPods: %d is more than numPods (%d), the pods the job starts with; lower minPods or raise numPods" (int .minPods) (int $v.numPods)) -}}
{{- end -}}
{{- if lt (int .maxPods) (int $v.numPods) -}}
{{- $problems = append $problems (printf "elastic.maxPods: %d is less than numPods (%d), the pods the job starts with; raise maxPods or lower numPods" (int .maxPods) (int $v.numPods)) -}}
{{- end -}}
{{- end -}}
{{- if eq (include "torchwrap.wordsOfMainProgram" $v) "true" -}}
{{- with (include "torchwrap.words" $v.mainProgram | fromJson).error -}}
{{- $problems = append $problems (printf "mainProgram: %s; it is split into words as a shell would (without running one), so close every quote and escape a final backslash" .) -}}
{{- end -}}
{{- end -}}
{{- range $i, $t := $v.tolerations -}}
{{- $operator := $t.operator | default "Equal" -}}
{{- if and (not $t.key) (ne $operator "Exists") -}}
{{- $problems = append $problems (printf "tolerations[%d].operator: a toleration without key tolerates every taint and needs operator Exists; set operator: Exists, or a key" $i) -}}
{{- end -}}
{{- if and (eq $operator "Exists") $t.value -}}
{{- $problems = append $problems (printf "tolerations[%d].value: operator Exists matches any value; remove the value, or use operator: Equal" $i) -}}
{{- end -}}
{{- if and (hasKey $t "tolerationSeconds") (ne (toString $t.effect) "NoExecute") -}}
{{- $problems = append $problems (printf "tolerations[%d].tolerationSeconds: applies to effect NoExecute only; set effect: NoExecute, or remove tolerationSeconds" $i) -}}
{{- end -}}
{{- end -}}
{{- if and $v.multiNicNetworkName (hasKey ($v.podAnnotations | default dict) "k8s.v1.cni.cncf.io/networks") -}}
{{- $problems = append $problems "podAnnotations[\"k8s.v1.cni.cncf.io/networks\"]: is set by multiNicNetworkName; remove one of the two" -}}
{{- end -}}
{{- with $v.podLabels -}}
{{- $ownLabels := include "torchwrap.ownPodLabels" $ | fromJson -}}
{{- range $key := keys . | sortAlpha -}}
{{- if hasKey $ownLabels $key -}}
{{- $problems = append $problems (printf "podLabels[%q]: is a label customLabels or autopilotHealthChecks set already; remove it from podLabels" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $i, $code := $v.retryableExitCodes -}}
{{- if has $code ($v.terminalExitCodes | default list) -}}
{{- $problems = append $problems (printf "retryableExitCodes[%d]: %v is in terminalExitCodes too; keep it in one of the two" $i $code) -}}
{{- end -}}
{{- end -}}
{{- with $problems -}}
{{- fail (join "\n" .) -}}
{{- end -}}
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
