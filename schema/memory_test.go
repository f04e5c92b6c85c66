package schema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoryGuess(t *testing.T) {
	for in, want := range map[string]string{
		"16": "16Gi", "0.5": "0.5Gi", "1023": "1023Gi", "1024": "1024Mi", "4096": "4096Mi",
		"512k": "512M", "512Ki": "512Mi",
		"0": "", "0.0": "", "1e3": "", "0.5M": "", "16m": "", "Inf": "", "": "",
	} {
		require.Equal(t, want, MemoryGuess(in), in)
	}
}
