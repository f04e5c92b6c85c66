{{- /*
The launch: what the training container runs. The shell script of the kinds
that run one (torchwrap.launchScript: the opening lines, the setup commands,
then one torchrun line; torchwrap.torchrunScript, its options for the pods
that find RANK, WORLD_SIZE and the master in their environment), quoting for it, the processes per pod, and the split
of mainProgram into words for the kinds that run it without a shell.
*/ -}}

{{- /*
torchwrap.setupScript: the lines every launch script starts with: the
workspace unpacked into the working folder when one is shipped (its parts, in
order, are one gzipped tar; the script stops when they cannot be unpacked),
Sakkara's rank
when Sakkara schedules the pods, then the user's setupCommands, in order; a
command written as a YAML block (- |) ends in a newline, which is dropped. With
setupErrexit, the setup commands run under set -e, and the shell stops at the
first that fails, with its exit status; set +e after them leaves torchrun's line
as it was.
*/ -}}
{{- define "torchwrap.setupScript" -}}
{{- $errexit := and .setupErrexit .setupCommands }}
{{- with .workspace }}
cat {{ include "torchwrap.workspacePath" . }}/part-* | tar -xzf - || { echo "the workspace could not be unpacked into $PWD" >&2; exit 1; }
echo "Workspace {{ trunc 19 .digest }} ({{ .files }} files) unpacked into the working folder"
{{- end }}
{{- if $errexit }}
set -e
{{- end }}
{{- if eq (include "torchwrap.sakkara" .) "true" }}
echo "Sakkara schedules this job: RANK is the rank Sakkara assigned (${SAKKARA_RANK})"
export RANK=$SAKKARA_RANK
{{- end }}
{{- range .setupCommands }}
{{ trimSuffix "\n" . }}
{{- end }}
{{- if $errexit }}
set +e
{{- end }}
{{- end -}}

{{- /*
torchwrap.launchScript: the training container's shell script, for the kinds
that launch torchrun from a shell. It says which pod it is, runs the setup
commands (torchwrap.setupScript), then, when there is a mainProgram, torchrun
with the options of the kind and those of the settings (torchrun.maxRestarts,
torchrun.extraOptions, in that order). Takes:
  .Values       the settings
  .options      the kind's torchrun options: how the pods meet, and how many
                processes each pod starts
  .maxRestarts  whether the torchrun line passes torchrun.maxRestarts (not
                when the operator passes it in the environment)
  .endpoint     the rendezvous endpoint, as shell text
  .announce     what the script says before it starts torchrun
  .opening      the first line, which says which pod it is (shell text); unset,
                it reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
*/ -}}
{{- define "torchwrap.launchScript" -}}
{{- $v := .Values -}}
{{ .opening | default `echo "Pod ${RANK} of ${WORLD_SIZE}; master at ${MASTER_ADDR}:${MASTER_PORT}"` }}
{{- include "torchwrap.setupScript" $v }}
{{- if $v.mainProgram }}
{{- $torchrun := $v.torchrun | default dict }}
{{- $options := .options }}
{{- if and .maxRestarts (hasKey $torchrun "maxRestarts") }}
{{- $options = append $options (printf "--max_restarts=%d" (int $torchrun.maxRestarts)) }}
{{- end }}
{{- range $torchrun.extraOptions }}
{{- $options = append $options (include "torchwrap.shellQuote" .) }}
{{- end }}
echo "{{ .announce }}"
torchrun {{ join " " $options }} --rdzv_endpoint={{ .endpoint }} {{ $v.mainProgram }}
{{- end }}
{{ end -}}

{{- /*
torchwrap.torchrunScript: the training container's shell script in the pods
that find RANK, WORLD_SIZE (the number of pods), MASTER_ADDR and MASTER_PORT in
their environment: a PyTorchJob's, where the training operator sets them (as
spec.nprocPerNode stays unset), and a JobSet's, where the generator does. torchrun starts one process per
GPU (or torchrun.nprocPerNode) and meets the other pods:
- static rendezvous (the default): each pod's rank is RANK;
- c10d rendezvous (torchrun.rdzvBackend): at the master, which assigns ranks;
- elastic (a PyTorchJob's): c10d at the endpoint the operator sets from elasticPolicy
  (PET_RDZV_ENDPOINT), between PET_NNODES=min:max pods; torchrun reads the
  restart count from PET_MAX_RESTARTS.
The rest of the script is torchwrap.launchScript's.
*/ -}}
{{- define "torchwrap.torchrunScript" -}}
{{- $torchrun := .torchrun | default dict -}}
{{- $static := and (not .elastic) (ne (toString $torchrun.rdzvBackend) "c10d") -}}
{{- $options := list -}}
{{- $endpoint := `"${MASTER_ADDR}:${MASTER_PORT}"` -}}
{{- $announce := "Starting torchrun on ${WORLD_SIZE} pods" -}}
{{- if .elastic -}}
{{- $options = list "--nnodes=${PET_NNODES}" "--rdzv_backend=c10d" -}}
{{- $endpoint = `"${PET_RDZV_ENDPOINT}"` -}}
{{- $announce = "Starting elastic torchrun on ${PET_NNODES} (min:max) pods" -}}
{{- else if $static -}}
{{- $options = list "--nnodes=${WORLD_SIZE}" "--node_rank=${RANK}" -}}
{{- else -}}
{{- $options = list "--nnodes=${WORLD_SIZE}" "--rdzv_backend=c10d" -}}
{{- end -}}
{{- if or $torchrun.nprocPerNode (gt (int .numGpusPerPod) 0) -}}
{{- $options = append $options (printf "--nproc_per_node=%s" (include "torchwrap.processesPerPod" .)) -}}
{{- end -}}
{{- $options = append $options (printf "--rdzv_id=%s" (ternary "101" .jobName $static)) -}}
{{- include "torchwrap.launchScript" (dict "Values" . "options" $options "maxRestarts" (not .elastic) "endpoint" $endpoint "announce" $announce) -}}
{{- end -}}

{{- /* torchwrap.shellQuote: a word quoted for sh, as it is. */ -}}
{{- define "torchwrap.shellQuote" -}}
'{{ replace "'" "'\\''" . }}'
{{- end -}}

{{- /*
torchwrap.processesPerPod: the processes torchrun starts in each pod:
torchrun.nprocPerNode, or one per GPU, one without GPUs.
*/ -}}
{{- define "torchwrap.processesPerPod" -}}
{{- int ((.torchrun | default dict).nprocPerNode | default (max 1 (int .numGpusPerPod))) -}}
{{- end -}}

{{- /*
torchwrap.words: a command line split into words as a POSIX shell splits it,
without expanding anything: blanks separate words; '...' keeps everything;
"..." keeps everything but \ before $ ` " \ or a newline; \ outside quotes keeps
the next character, and a backslash-newline joins lines. Returns {"words": [...]},
or {"error": "..."} for an unclosed quote or a final backslash.
*/ -}}
{{- define "torchwrap.words" -}}
{{- if gt (len .) 8192 -}}
{{- /* The schema caps mainProgram at 8192 too; the loop below must stay short
       even on settings not validated yet. */ -}}
{{- toJson (dict "error" "it is longer than 8192 characters") -}}
{{- else -}}
{{- /* The line in pieces: blanks; unquoted text; a backslash and the character
       after it; a '...' string; a "..." string with its backslash pairs; and
       last, any one character none of those takes, which is where the shell
       would fail: a quote it cannot close, or a final backslash. */ -}}
{{- $pieces := regexFindAll `[ \t\n]+|[^ \t\n'"\\]+|\\(?s:.)|'[^']*'|"(?:[^"\\]|\\(?s:.))*"|(?s:.)` . -1 -}}
{{- $words := list -}}
{{- $word := "" -}}
{{- $inWord := false -}}
{{- $error := "" -}}
{{- range $p := $pieces -}}
{{- if $error -}}
{{- else if eq $p "\\" -}}
{{- $error = "it ends with a backslash" -}}
{{- else if has $p (list "'" "\"") -}}
{{- $error = printf "a %s quote is not closed" $p -}}
{{- else if has (substr 0 1 $p) (list " " "\t" "\n") -}}
{{- if $inWord -}}
{{- $words = append $words $word -}}
{{- end -}}
{{- $word = "" -}}
{{- $inWord = false -}}
{{- else if eq $p "\\\n" -}}
{{- /* A backslash-newline only joins lines. */ -}}
{{- else -}}
{{- if hasPrefix "'" $p -}}
{{- $word = print $word (substr 1 (int (sub (len $p) 1)) $p) -}}
{{- else if hasPrefix "\"" $p -}}
{{- $word = print $word (regexReplaceAll "\\\\(?:\n|([$`\"\\\\]))" (substr 1 (int (sub (len $p) 1)) $p) "${1}") -}}
{{- else -}}
{{- $word = print $word (trimPrefix "\\" $p) -}}
{{- end -}}
{{- $inWord = true -}}
{{- end -}}
{{- end -}}
{{- if $error -}}
{{- toJson (dict "error" $error) -}}
{{- else -}}
{{- if $inWord -}}
{{- $words = append $words $word -}}
{{- end -}}
{{- toJson (dict "words" $words) -}}
{{- end -}}
{{- end -}}
{{- end -}}
