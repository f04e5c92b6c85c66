{{- /*
Generated from schema/settings.schema.json (x-kind-defaults) by make generate:
edit the schema, not this file.

torchwrap.kindDefaults: the settings whose default follows jobKind, each
with its default ("") and the kinds' own. values.yaml leaves them out, so that
a setting left unset can be told from one set to null.
*/ -}}
{{- define "torchwrap.kindDefaults" -}}
{"priority":{"":"default-priority","TrainJob":null},"wrapper":{"":"AppWrapper","TrainJob":"none"}}
{{- end -}}
