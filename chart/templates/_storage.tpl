{{- /*
The storage of the pod: the user's volumes and those the generator adds for
its settings, each with its mount, in one list that both builds the pod and is
checked for clashes; and the default mount paths of the ssh volumes.
*/ -}}

{{- /*
torchwrap.storage: every volume of the pod with its mount in the training
container, in pod order. Each entry: volume, mount, what (for messages), and the
settings keys its name and mount path come from (empty when the generator fixes
them). Used to build the pod and to check for clashes.
*/ -}}
{{- define "torchwrap.storage" -}}
{{- $entries := list -}}
{{- with .topologyFileConfigMap -}}
{{- $entries = append $entries (dict
    "what" "the topology file volume (topologyFileConfigMap)"
    "volume" (dict "name" "topology-volume" "configMap" (dict "name" .))
    "mount" (dict "name" "topology-volume" "mountPath" "/var/run/nvidia-topologyd")) -}}
{{- end -}}
{{- with .mountNVMe -}}
{{- $claim := dict
    "storageClassName" (.storageClassName | default "odf-lvm-vg1")
    "volumeMode" "Filesystem"
    "accessModes" (list "ReadWriteOnce")
    "resources" (dict "requests" (dict "storage" .storage)) -}}
{{- $entries = append $entries (dict
    "what" "the NVMe scratch volume (mountNVMe)"
    "pathKey" (ternary "mountNVMe.mountPath" "" (not (empty .mountPath)))
    "volume" (dict "name" "ephemeral-odf-lvm-vg1" "ephemeral" (dict "volumeClaimTemplate" (dict "spec" $claim)))
    "mount" (dict "name" "ephemeral-odf-lvm-vg1" "mountPath" (.mountPath | default "/workspace/scratch-nvme"))) -}}
{{- end -}}
{{- range $i, $volume := .volumes -}}
{{- $entries = append $entries (dict
    "what" (printf "volumes[%d]" $i)
    "nameKey" (printf "volumes[%d].name" $i)
    "pathKey" (printf "volumes[%d].mountPath" $i)
    "volume" (dict "name" $volume.name "persistentVolumeClaim" (dict "claimName" $volume.claimName))
    "mount" (merge (dict "name" $volume.name "mountPath" $volume.mountPath) (pick $volume "readOnly" "subPath"))) -}}
{{- end -}}
{{- with .sshGitCloneConfig -}}
{{- $entries = append $entries (dict
    "what" "the ssh deploy key volume (sshGitCloneConfig.secretName)"
    "pathKey" (ternary "sshGitCloneConfig.secretMountPath" "" (not (empty .secretMountPath)))
    "volume" (dict "name" "private-ssh-git-deploy-key" "secret" (dict "secretName" .secretName "optional" false))
    "mount" (dict "name" "private-ssh-git-deploy-key" "mountPath" (include "torchwrap.sshKeyPath" .) "readOnly" true)) -}}
{{- $entries = append $entries (dict
    "what" "the ssh known hosts volume (sshGitCloneConfig.configMapName)"
    "pathKey" (ternary "sshGitCloneConfig.configMapMountPath" "" (not (empty .configMapMountPath)))
    "volume" (dict "name" "github-known-hosts" "configMap" (dict "name" .configMapName))
    "mount" (dict "name" "github-known-hosts" "mountPath" (include "torchwrap.sshHostsPath" .))) -}}
{{- end -}}
{{- with .workspace -}}
{{- $sources := list -}}
{{- range .configMaps -}}
{{- $sources = append $sources (dict "configMap" (dict "name" .)) -}}
{{- end -}}
{{- $entries = append $entries (dict
    "what" "the packed workspace (--workspace)"
    "volume" (dict "name" "torchwrap-workspace" "projected" (dict "sources" $sources))
    "mount" (dict "name" "torchwrap-workspace" "mountPath" (include "torchwrap.workspacePath" .) "readOnly" true)) -}}
{{- end -}}
{{- if not .disableSharedMemory -}}
{{- $emptyDir := dict "medium" "Memory" -}}
{{- with .sharedMemorySize -}}
{{- $_ := set $emptyDir "sizeLimit" . -}}
{{- end -}}
{{- $entries = append $entries (dict
    "what" "the shared memory volume (dshm)"
    "volume" (dict "name" "dshm" "emptyDir" $emptyDir)
    "mount" (dict "name" "dshm" "mountPath" "/dev/shm")) -}}
{{- end -}}
{{- toJson (dict "entries" $entries) -}}
{{- end -}}

{{- /*
torchwrap.workspacePath: where the pods find the packed workspace's parts, in
a folder of its own that needs no root to make (run --local makes it too).
*/ -}}
{{- define "torchwrap.workspacePath" -}}/tmp/torchwrap-workspace{{- end -}}
{{- define "torchwrap.sshKeyPath" -}}{{ .secretMountPath | default "/tmp/.ssh/keys" }}{{- end -}}
{{- define "torchwrap.sshHostsPath" -}}{{ .configMapMountPath | default "/tmp/.ssh/hosts" }}{{- end -}}
