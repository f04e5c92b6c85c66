package local

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What the first lines say of the GPUs: the job's against this machine's.
func TestGPUNote(t *testing.T) {
	require.Empty(t, gpuNote("NVIDIA GPU", 0, 2, 0), "a job without GPUs")
	require.Equal(t, "no NVIDIA GPU here (the job asks 8 a pod): its processes run on CPU, so the program must choose a backend that runs there (gloo)",
		gpuNote("NVIDIA GPU", 8, 2, 0))
	require.Equal(t, "this machine has 1 AMD GPU, fewer than the job's 16 (8 a pod): every pod sees all of them, so fewer processes may be needed (--set torchrun.nprocPerNode=1, --pods 1)",
		gpuNote("AMD GPU", 8, 2, 1))
	require.Equal(t, "the pods share this machine's 4 Intel Gaudis (the job asks 2 a pod): every pod sees all of them", gpuNote("Intel Gaudi", 2, 2, 4))
}
