package local

// What the kubelet gives a container to run: its environment, and its
// command and arguments with $(VAR) put in, as the kubelet works them out (kubelet_pods.go's makeEnvironmentVariables and
// the expansion package): envFrom first, in order, then env, in order, each
// value with the variables defined before it put in; valueFrom from the pod's
// fields, the container's resources, or a ConfigMap's or Secret's key in the
// pod's namespace. Service links are not made.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// KeyedData reads the data of ConfigMaps and Secrets of a namespace: nil
// and no error when there is no such object.
type KeyedData interface {
	ConfigMap(ctx context.Context, namespace, name string) (map[string]string, error)
	Secret(ctx context.Context, namespace, name string) (map[string]string, error)
}

// NotFoundError is a ConfigMap or Secret (kind configmap or secret) that a
// container reads and its namespace does not have.
type NotFoundError struct{ Kind, Name string }

func (e NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.Kind, e.Name) }

// ContainerEnv is the environment of container c of pod, which runs on a node
// with the resources allocatable (what a resourceFieldRef gives for a limit
// the container does not set).
func ContainerEnv(ctx context.Context, data KeyedData, pod *corev1.Pod, c *corev1.Container, allocatable corev1.ResourceList) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		var values map[string]string
		var err error
		var kind, name string
		var optional *bool
		switch {
		case from.ConfigMapRef != nil:
			kind, name, optional = "ConfigMap", from.ConfigMapRef.Name, from.ConfigMapRef.Optional
			values, err = data.ConfigMap(ctx, pod.Namespace, name)
		case from.SecretRef != nil:
			kind, name, optional = "Secret", from.SecretRef.Name, from.SecretRef.Optional
			values, err = data.Secret(ctx, pod.Namespace, name)
		}
		if err != nil {
			return nil, err
		}
		if values == nil && !isTrue(optional) {
			return nil, NotFoundError{strings.ToLower(kind), name}
		}
		for key, value := range values {
			env[from.Prefix+key] = value
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = Expand(e.Value, env)
			continue
		}
		value, ok, err := valueFrom(ctx, data, pod, c, e.ValueFrom, allocatable)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			env[e.Name] = value
		}
	}
	return env, nil
}

// valueFrom is a variable's value from its source; false for an optional key
// that is not there.
func valueFrom(ctx context.Context, data KeyedData, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, allocatable corev1.ResourceList) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		value, err := podField(pod, from.FieldRef.FieldPath)
		return value, err == nil, err
	case from.ResourceFieldRef != nil:
		value, err := resourceField(pod, c, from.ResourceFieldRef, allocatable)
		return value, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		values, err := data.ConfigMap(ctx, pod.Namespace, ref.Name)
		return key(values, err, "configmap", ref.Name, ref.Key, ref.Optional)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		values, err := data.Secret(ctx, pod.Namespace, ref.Name)
		return key(values, err, "secret", ref.Name, ref.Key, ref.Optional)
	}
	return "", false, fmt.Errorf("a valueFrom without a source")
}

// key is a ConfigMap's or Secret's key, as valueFrom gives it.
func key(values map[string]string, err error, kind, name, key string, optional *bool) (string, bool, error) {
	if err != nil {
		return "", false, err
	}
	value, ok := values[key]
	switch {
	case ok:
		return value, true, nil
	case isTrue(optional):
		return "", false, nil
	case values == nil:
		return "", false, NotFoundError{kind, name}
	}
	return "", false, fmt.Errorf("couldn't find key %s in %s %s", key, kind, name)
}

func isTrue(b *bool) bool { return b != nil && *b }

// podField is the value of a fieldRef.
func podField(pod *corev1.Pod, path string) (string, error) {
	for _, f := range []struct {
		prefix string
		from   map[string]string
	}{{"metadata.labels", pod.Labels}, {"metadata.annotations", pod.Annotations}} {
		if path == f.prefix {
			var lines []string
			for _, k := range slices.Sorted(maps.Keys(f.from)) {
				lines = append(lines, fmt.Sprintf("%s=%q", k, f.from[k]))
			}
			return strings.Join(lines, "\n"), nil
		}
		if name, ok := strings.CutPrefix(path, f.prefix+"['"); ok && strings.HasSuffix(name, "']") {
			return f.from[strings.TrimSuffix(name, "']")], nil
		}
	}
	ips := func(list []corev1.PodIP) string {
		var out []string
		for _, ip := range list {
			out = append(out, ip.IP)
		}
		return strings.Join(out, ",")
	}
	hostIPs := func(list []corev1.HostIP) string {
		var out []string
		for _, ip := range list {
			out = append(out, ip.IP)
		}
		return strings.Join(out, ",")
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		return hostIPs(pod.Status.HostIPs), nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		return ips(pod.Status.PodIPs), nil
	}
	return "", fmt.Errorf("unsupported fieldRef %s", path)
}

// resourceField is the value of a resourceFieldRef: the quantity over the
// divisor, rounded up, as the kubelet gives it; a limit the container does
// not set is the node's allocatable.
func resourceField(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &pod.Spec.Containers[i]
			}
		}
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		q, ok = allocatable[corev1.ResourceName(name)]
	}
	if !ok {
		return "", fmt.Errorf("no %s for resourceFieldRef %s", name, ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
}

// expand puts the variables of env into s where it says $(NAME), as the
// kubelet does: $$ is a $, and a $(NAME) of a variable env does not have
// stays as it is.
func Expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if value, ok := env[name]; ok {
				b.WriteString(value)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
