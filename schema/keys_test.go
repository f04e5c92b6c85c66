package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/diag"
)

// Every key, at every depth, is documented: a description and a type, and a
// place in a section.
func TestEveryKeyIsDocumented(t *testing.T) {
	s, err := Model()
	require.NoError(t, err)
	keys := s.Keys()
	require.Greater(t, len(keys), len(s.Properties), "fields of objects and of list items are keys too")
	for _, k := range keys {
		require.NotEmpty(t, k.Description, k.Path)
		require.NotEmpty(t, k.Section, k.Path)
		require.NotContains(t, k.Type, "any value", k.Path)
		require.NotNil(t, s.At(diag.ParsePath(strings.ReplaceAll(k.Path, "[]", "[0]"))), k.Path)
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"numPods", "numGpusPerPod", "numCpusPerPod", "jobName", "mainProgram"}
	lower := func(words []string) []string {
		out := make([]string, len(words))
		for i, w := range words {
			out[i] = strings.ToLower(w)
		}
		return out
	}
	require.Equal(t, "numGpusPerPod", Closest("numGPUsPerPod", keys, lower(keys)))
	require.Equal(t, "jobName", Closest("jobname", keys, lower(keys)))
	require.Equal(t, "mainProgram", Closest("mainProgam", keys, lower(keys)))
	priorities := []string{"default-priority", "low-priority", "high-priority"}
	require.Equal(t, "high-priority", Closest("high", priorities, lower(priorities)))
	require.Equal(t, "", Closest("storage", keys, lower(keys)))
	require.Equal(t, "", Closest("num", keys, lower(keys)), "several keys start with num")

	// Names that share a common part are no typos of each other for it.
	queues := []string{"default-queue", "small-queue", "tiny-queue"}
	require.Equal(t, "", Closest("no-queue", queues, lower(queues)))
	require.Equal(t, "", Closest("team-b", []string{"team-a"}, []string{"team-a"}))
	require.Equal(t, "default-queue", Closest("defualt-queue", queues, lower(queues)), "a swap is one edit")
	require.Equal(t, "small-queue", Closest("smal-queue", queues, lower(queues)))
	require.Equal(t, "tiny-queue", Closest("tiny-queeu", queues, lower(queues)))
}
