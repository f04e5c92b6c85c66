package local

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What the first lines say of the GPUs: the job's against this machine's.
func TestGPUNote(t *testing.T) {
	require.Empty(t, gpuNote(0, 2, 0), "a job without GPUs")
	require.Equal(t, "no GPU here (the job asks 8 a pod): its processes run on CPU, so the program must choose a backend that runs there (gloo, not nccl)",
		gpuNote(8, 2, 0))
	require.Equal(t, "this machine has 1 GPU(s), fewer than the job's 16 (8 a pod): every pod sees all of them, so fewer processes may be needed (--set torchrun.nprocPerNode=1, --pods 1)",
		gpuNote(8, 2, 1))
	require.Equal(t, "the pods share this machine's 4 GPUs (the job asks 2 a pod): every pod sees all of them", gpuNote(2, 2, 4))
}
