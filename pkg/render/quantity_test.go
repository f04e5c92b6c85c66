package render_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
)

// The chart refuses a CPU or memory limit below its request exactly when
// Kubernetes does: for every pair of quantities, it agrees with
// resource.Quantity.Cmp.
func TestLimitBelowRequestAgreesWithKubernetes(t *testing.T) {
	quantities := []any{"1", "2", "0.5", ".5", "500m", "1000m", "1.5", "1500m", "1e3", "1k", "1E3", "1024", "1Ki",
		"1Mi", "1048576", "1M", "1G", "1Gi", "0.5Gi", "512Mi", "1.5Gi", "1536Mi", "1Ti", "1099511627775", "1P", "1E", "1Ei",
		"100m", "0.1", "1n", "1u", "1000n", 1, 2, 4}
	for _, request := range quantities {
		for _, limit := range quantities {
			for _, resourceName := range []string{"memory", "cpu"} {
				values := map[string]any{"jobName": "q", "containerImage": "busybox"}
				if resourceName == "cpu" {
					values["numCpusPerPod"], values["limitCpusPerPod"] = request, limit
				} else {
					values["totalMemoryPerPod"], values["limitMemoryPerPod"] = request, limit
				}
				if _, isInt := request.(int); isInt && resourceName == "memory" {
					continue // the schema wants memory as text
				}
				if _, isInt := limit.(int); isInt && resourceName == "memory" {
					continue
				}
				_, err := render.Render(&settings.Input{Values: values})
				limitQuantity, requestQuantity := quantity(t, limit), quantity(t, request)
				below := limitQuantity.Cmp(requestQuantity) < 0
				if below {
					require.ErrorContains(t, err, "below", "%s request %v limit %v", resourceName, request, limit)
				} else {
					require.NoError(t, err, "%s request %v limit %v", resourceName, request, limit)
				}
			}
		}
	}
}

func quantity(t *testing.T, v any) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	require.NoError(t, err)
	return q
}
