//go:build linux

package e2e

// A process node's pod sandbox: its address, its files (/etc/hosts,
// /etc/resolv.conf, /etc/hostname, as a kubelet writes them) and its volumes.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// makeSandbox makes the pod's namespaces, with its files and volumes.
func (r *podRun) makeSandbox() (*sandbox, error) {
	ctx, cancel := context.WithTimeout(r.nodes.ctx, 30*time.Second)
	defer cancel()
	mounts, err := r.mounts(ctx)
	if err != nil {
		return nil, err
	}
	ip, link, err := r.nodes.network.address()
	if err != nil {
		return nil, err
	}
	hostname := r.hostname()
	own := hostname
	if sub := r.pod.Spec.Subdomain; sub != "" {
		own = fmt.Sprintf("%s.%s.%s.svc.%s\t%s", hostname, sub, r.pod.Namespace, clusterDomain, hostname)
	}
	hosts := fmt.Sprintf("# Kubernetes-managed hosts file (the process nodes').\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"+
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n%s\t%s\n", ip, own)
	if len(r.pod.Spec.HostAliases) > 0 {
		hosts += "\n# Entries added by HostAliases.\n"
		for _, a := range r.pod.Spec.HostAliases {
			hosts += a.IP + "\t" + strings.Join(a.Hostnames, "\t") + "\n"
		}
	}
	ns := r.pod.Namespace
	files := map[string]string{
		"/etc/hosts":       hosts,
		"/etc/resolv.conf": fmt.Sprintf("search %s.svc.%[2]s svc.%[2]s %[2]s\nnameserver %s\noptions ndots:5\n", ns, clusterDomain, podBridgeIP),
		"/etc/hostname":    hostname + "\n",
	}
	for _, target := range slices.Sorted(maps.Keys(files)) {
		source := filepath.Join(r.dir, filepath.Base(target))
		if err := os.WriteFile(source, []byte(files[target]), 0o644); err != nil {
			return nil, err
		}
		mounts = append([]mount{{source: source, target: target}}, mounts...)
	}
	mounts = append([]mount{{source: r.nodes.tools, target: podTools, readOnly: true}}, mounts...)
	return r.nodes.network.newSandbox(ip, link, hostname, filepath.Join(r.dir, "tmp"), mounts)
}

// mounts are the mounts of the pod's volumes where its containers (init
// containers too: they share the pod's mount namespace here) mount them:
// memory volumes first, each mounted once, then every volume mount, parents
// before what is below them. Two containers that mount different things at
// one path are refused.
func (r *podRun) mounts(ctx context.Context) ([]mount, error) {
	sources := map[string]string{}
	var out []mount
	for _, v := range r.pod.Spec.Volumes {
		source, memory, err := r.volume(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		sources[v.Name] = source
		if memory != nil {
			limit := int64(0)
			if memory.SizeLimit != nil {
				limit = memory.SizeLimit.Value()
			}
			out = append(out, mount{target: source, memory: true, limit: limit, onHost: true})
		}
	}
	var binds []mount
	for _, c := range append(slices.Clone(r.pod.Spec.InitContainers), r.pod.Spec.Containers...) {
		for _, vm := range c.VolumeMounts {
			source, ok := sources[vm.Name]
			if !ok {
				return nil, fmt.Errorf("container %s mounts volume %q, which the pod does not have", c.Name, vm.Name)
			}
			m := mount{source: filepath.Join(source, vm.SubPath), target: filepath.Clean(vm.MountPath), readOnly: vm.ReadOnly}
			if vm.SubPath != "" {
				if err := os.MkdirAll(m.source, 0o755); err != nil {
					return nil, err
				}
			}
			i := slices.IndexFunc(binds, func(b mount) bool { return b.target == m.target })
			switch {
			case i < 0:
				binds = append(binds, m)
			case binds[i] != m:
				return nil, fmt.Errorf("two containers mount different volumes at %s; the process nodes give a pod's containers one mount namespace", m.target)
			}
		}
	}
	slices.SortStableFunc(binds, func(a, b mount) int { return strings.Count(a.target, "/") - strings.Count(b.target, "/") })
	return append(out, binds...), nil
}

// volume makes a volume's folder, and gives it, with the emptyDir source of
// a memory volume (to be mounted there as tmpfs).
func (r *podRun) volume(ctx context.Context, v corev1.Volume) (string, *corev1.EmptyDirVolumeSource, error) {
	own := filepath.Join(r.dir, "volumes", v.Name)
	switch {
	case v.EmptyDir != nil:
		var memory *corev1.EmptyDirVolumeSource
		if v.EmptyDir.Medium == corev1.StorageMediumMemory {
			memory = v.EmptyDir
		}
		return own, memory, os.MkdirAll(own, 0o777)
	case v.Ephemeral != nil:
		return own, nil, os.MkdirAll(own, 0o777)
	case v.HostPath != nil:
		return v.HostPath.Path, nil, nil
	case v.ConfigMap != nil:
		data, err := r.nodes.ConfigMap(ctx, r.pod.Namespace, v.ConfigMap.Name)
		if err != nil {
			return "", nil, err
		}
		if data == nil && !isTrue(v.ConfigMap.Optional) {
			return "", nil, fmt.Errorf("configmap %q not found", v.ConfigMap.Name)
		}
		return own, nil, writeItems(own, data, v.ConfigMap.Items, v.ConfigMap.DefaultMode)
	case v.Secret != nil:
		data, err := r.nodes.Secret(ctx, r.pod.Namespace, v.Secret.SecretName)
		if err != nil {
			return "", nil, err
		}
		if data == nil && !isTrue(v.Secret.Optional) {
			return "", nil, fmt.Errorf("secret %q not found", v.Secret.SecretName)
		}
		return own, nil, writeItems(own, data, v.Secret.Items, v.Secret.DefaultMode)
	case v.PersistentVolumeClaim != nil:
		return r.claim(ctx, v.PersistentVolumeClaim.ClaimName)
	case v.Projected != nil:
		return own, nil, r.projected(ctx, own, v.Projected)
	}
	return "", nil, fmt.Errorf("the process nodes do not support this kind of volume")
}

// projected writes the keys of a projected volume's ConfigMaps into its
// folder, as the kubelet does; the process nodes project nothing else.
func (r *podRun) projected(ctx context.Context, dir string, v *corev1.ProjectedVolumeSource) error {
	for _, source := range v.Sources {
		if source.ConfigMap == nil {
			return fmt.Errorf("the process nodes project ConfigMaps only")
		}
		data, err := r.nodes.ConfigMap(ctx, r.pod.Namespace, source.ConfigMap.Name)
		if err != nil {
			return err
		}
		if data == nil && !isTrue(source.ConfigMap.Optional) {
			return fmt.Errorf("configmap %q not found", source.ConfigMap.Name)
		}
		if err := writeItems(dir, data, source.ConfigMap.Items, v.DefaultMode); err != nil {
			return err
		}
	}
	return nil
}

// claim is the folder of a PersistentVolumeClaim: the path of the hostPath
// PersistentVolume it is bound to, else a folder of its own, which the
// claim's pods share and which lives as long as the process nodes.
func (r *podRun) claim(ctx context.Context, name string) (string, *corev1.EmptyDirVolumeSource, error) {
	client := r.nodes.client.CoreV1()
	pvc, err := client.PersistentVolumeClaims(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	if pvc.Spec.VolumeName != "" {
		pv, err := client.PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return "", nil, err
		}
		if pv.Spec.HostPath != nil {
			return pv.Spec.HostPath.Path, nil, nil
		}
	}
	dir := filepath.Join(r.nodes.dir, "claims", r.pod.Namespace, name)
	return dir, nil, os.MkdirAll(dir, 0o777)
}

// writeItems writes a ConfigMap's or a Secret's keys as files into dir: the
// items named, or every key.
func writeItems(dir string, data map[string]string, items []corev1.KeyToPath, defaultMode *int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			return fmt.Errorf("no key %q", item.Key)
		}
		path := filepath.Join(dir, item.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		m := mode
		if item.Mode != nil {
			m = os.FileMode(*item.Mode)
		}
		if err := os.WriteFile(path, []byte(value), m); err != nil {
			return err
		}
		if err := os.Chmod(path, m); err != nil {
			return err
		}
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }
