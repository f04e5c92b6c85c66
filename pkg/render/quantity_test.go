package render_test

import (
	"fmt"
	"strings"
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
	type pair struct {
		resource       string
		request, limit any
	}
	var pairs []pair
	var ins []*settings.Input
	for _, request := range quantities {
		for _, limit := range quantities {
			for _, resourceName := range []string{"memory", "cpu"} {
				values := map[string]any{"jobName": "q", "containerImage": "busybox"}
				if resourceName == "cpu" {
					values["numCpusPerPod"], values["limitCpusPerPod"] = request, limit
				} else {
					values["totalMemoryPerPod"], values["limitMemoryPerPod"] = request, limit
				}
				if resourceName == "memory" && !(memorySize(request) && memorySize(limit)) {
					continue
				}
				pairs = append(pairs, pair{resourceName, request, limit})
				ins = append(ins, &settings.Input{Values: values})
			}
		}
	}
	// All in one call of the engine: RenderAll gives each what Render gives it.
	for i, outcome := range render.RenderAll(ins, nil) {
		p := pairs[i]
		limit, request := quantity(t, p.limit), quantity(t, p.request)
		if limit.Cmp(request) < 0 {
			require.ErrorContains(t, outcome.Err, "below", "%s request %v limit %v", p.resource, p.request, p.limit)
		} else {
			require.NoError(t, outcome.Err, "%s request %v limit %v", p.resource, p.request, p.limit)
		}
	}
}

// memorySize tells whether the schema takes v as a memory size: text, in
// units no smaller than a byte (not m, u or n).
func memorySize(v any) bool {
	s, isText := v.(string)
	return isText && !strings.ContainsAny(s[len(s)-1:], "mun")
}

func quantity(t *testing.T, v any) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	require.NoError(t, err)
	return q
}
