package local

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	for in, want := range map[string]string{
		"$(A)":           "1",
		"x$(A)y$(A)":     "x1y1",
		"$(EMPTY)|":      "|",
		"$(MISSING)":     "$(MISSING)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"$A ${A}":        "$A ${A}",
		"$(A":            "$(A",
		"trailing $":     "trailing $",
		"--rank=$(A) $x": "--rank=1 $x",
	} {
		require.Equal(t, want, Expand(in, env), "Expand(%q)", in)
	}
}

// data are ConfigMaps and Secrets of one namespace, by name.
type data struct{ configMaps, secrets map[string]map[string]string }

func (d data) ConfigMap(_ context.Context, _, name string) (map[string]string, error) {
	return d.configMaps[name], nil
}

func (d data) Secret(_ context.Context, _, name string) (map[string]string, error) {
	return d.secrets[name], nil
}

func TestContainerEnv(t *testing.T) {
	optional := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-worker-0", Namespace: "ml", UID: "u-1",
			Labels: map[string]string{"role": "worker"}, Annotations: map[string]string{"index": "3"}},
		Spec:   corev1.PodSpec{NodeName: "process-node-0"},
		Status: corev1.PodStatus{PodIP: "10.89.0.7", HostIP: "127.0.0.1"},
	}
	c := &corev1.Container{
		Name: "pytorch",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("1500m"), "memory": resource.MustParse("1Gi")},
		},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &optional}},
		},
		Env: []corev1.EnvVar{
			{Name: "MODE", Value: "override"},
			{Name: "RANK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['index']"}}},
			{Name: "MASTER", Value: "$(POD)-$(RANK)"},
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "LATE", Value: "$(POD)"},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
			{Name: "MAYBE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "nothing", Optional: &optional}}},
			{Name: "CPUS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu"}}},
			{Name: "MEMORY_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
				Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		},
	}
	d := data{
		configMaps: map[string]map[string]string{"settings": {"MODE": "from-configmap", "dashed-key": "kept"}},
		secrets:    map[string]map[string]string{"creds": {"token": "s3cret"}},
	}
	env, err := ContainerEnv(context.Background(), d, pod, c, corev1.ResourceList{"memory": resource.MustParse("2Gi")})
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"MODE":       "override",
		"dashed-key": "kept", // any key of a ConfigMap is a valid name
		"S_token":    "s3cret",
		"RANK":       "3",
		"MASTER":     "$(POD)-3", // POD is defined after MASTER
		"POD":        "job-worker-0",
		"LATE":       "job-worker-0",
		"IP":         "10.89.0.7",
		"TOKEN":      "s3cret",
		"CPUS":       "2",    // rounded up
		"MEMORY_MI":  "2048", // no limit: the node's allocatable
	}, env)

	// A missing object or key is an error the kubelet reports, unless optional.
	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}
	_, err = ContainerEnv(context.Background(), d, pod, c, nil)
	require.EqualError(t, err, "env X: couldn't find key password in secret creds")
	c.Env, c.EnvFrom = nil, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}
	_, err = ContainerEnv(context.Background(), d, pod, c, nil)
	require.EqualError(t, err, `secret "gone" not found`)
}
