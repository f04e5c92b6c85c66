//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// SimScaleNamespace is a namespace where the pods of kwok's fake nodes
// have a log: kwok serves each of their containers the same training log
// (trainingLog) through pods/log, so that reading the logs of a job there
// costs what it costs on a real cluster. Elsewhere their logs cannot be
// read, as before, but in RolesNamespaces.
const SimScaleNamespace = "sim-scale"

// RolesNamespaces are the namespaces of the roles scenario, one for each
// role a platform gives a team, where kwok serves the pods' logs too.
var RolesNamespaces = []string{"roles-mlbatch", "roles-kueue", "roles-edit", "roles-torchwrap"}

// TrainingLogLines is the number of lines of that log.
const TrainingLogLines = 2000

// kwokLogs is kwok's configuration of the logs it serves (%s: the
// namespaces, then the log's file).
const kwokLogs = `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: training-log
spec:
  selector:
    matchNamespaces: [%s]
  logs:
  - logsFile: %s
`

// writeTrainingLog writes the log of a rank of a large job as a
// container's log file, in the kubelet's (CRI) format, which kwok reads:
// the launch script's lines, torchrun's banner, NCCL's lines as it sets
// up its rings and channels, then a training loop's steps, lines in all.
func writeTrainingLog(path string, lines int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	n := 0
	say := func(format string, args ...any) {
		if n < lines {
			fmt.Fprintf(w, "%s stdout F %s\n", at.Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
			at = at.Add(137 * time.Millisecond)
			n++
		}
	}
	say("Pod 0 of 1024: llama-70b-pretrain-master-0")
	say("Starting torchrun on 1024 pods")
	say("WARNING:torch.distributed.run:")
	say("*****************************************")
	say("Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.")
	say("*****************************************")
	for rank := range 8 {
		say("llama-70b-pretrain-master-0:41:%d [%d] NCCL INFO Bootstrap : Using eth0:10.244.3.17<0>", 90+rank, rank)
		say("llama-70b-pretrain-master-0:41:%d [%d] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.244.3.17<0>", 90+rank, rank)
		say("llama-70b-pretrain-master-0:41:%d [%d] NCCL INFO cudaDriverVersion 12040", 90+rank, rank)
		for channel := range 32 {
			say("llama-70b-pretrain-master-0:41:%d [%d] NCCL INFO Channel %02d/32 :    0   8  16  24  32  40  48  56  64  72  80  88  96 104 112 120", 90+rank, rank, channel)
		}
		say("llama-70b-pretrain-master-0:41:%d [%d] NCCL INFO Connected all rings", 90+rank, rank)
		say("llama-70b-pretrain-master-0:41:%d [%d] NCCL INFO comm 0x5581c2d0 rank %d nranks 8192 cudaDev %d busId 1b000 commId 0x9c2f5a1e3b7d4e60 - Init COMPLETE", 90+rank, rank, rank, rank)
	}
	for step := 1; n < lines; step++ {
		say("[rank0] step %6d | loss %.4f | lr %.2e | grad norm %.3f | tokens/s %.3e | %.1f TFLOPS/GPU", step, 11.5/float64(1+step/50), 3e-4, 0.8+float64(step%7)/10, 1.21e6+float64(step%13)*1e3, 178.4+float64(step%5))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
