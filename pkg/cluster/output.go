package cluster

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
)

// Output is the last line a running job's pod of rank 0 wrote, and when
// (the kubelet's time of it). A job that hangs (a rank that waits for a
// peer that is gone, a collective that never ends, a stuck read) fails
// nothing for many minutes, and writes nothing meanwhile.
type Output struct {
	Member string    `json:"member"`
	At     time.Time `json:"at"`
	Line   string    `json:"line"`
	// QuietSeconds is how long before it was read the line was written.
	QuietSeconds int64 `json:"quietSeconds"`
}

// QuietAfter is how long rank 0 of a running job may write nothing before
// status says that the job may be stuck: longer than most jobs go between
// two lines, as long as NCCL's watchdog lets a collective wait by default.
const QuietAfter = 10 * time.Minute

// outputLineBytes bounds the line read: a progress bar redrawn with
// carriage returns is one line of the log.
const outputLineBytes = 64 * 1024

// lastOutput reads the last line of the log of the training container of
// the job's pod of rank 0, while it runs: one read, of one line, however
// many pods. Nil when there is none, or it cannot be read.
func (c *Client) lastOutput(ctx context.Context, obj *unstructured.Unstructured, podList []corev1.Pod) *Output {
	if c.LogSource == nil {
		return nil
	}
	k := kindOf(obj)
	for i := range podList {
		pod := &podList[i]
		if m, known := k.member(obj.Object, pod); !known || m.Rank != 0 {
			continue
		}
		container := k.trainingContainer(obj.Object, pod)
		if status, ok := podwatch.ContainerStatus(pod, container); !ok || status.State.Running == nil {
			return nil
		}
		one, limit := int64(1), int64(outputLineBytes)
		rc, err := c.LogSource.Log(ctx, pod.Namespace, pod.Name, podwatch.LogOptions{Container: container, TailLines: &one, Timestamps: true, LimitBytes: &limit})
		if err != nil {
			return nil
		}
		defer rc.Close()
		scanner := bufio.NewScanner(rc)
		scanner.Buffer(make([]byte, 4096), outputLineBytes+64)
		if !scanner.Scan() {
			return nil
		}
		stamp, line, _ := strings.Cut(scanner.Text(), " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return nil
		}
		quiet := max(int64(time.Since(at).Seconds()), 0)
		return &Output{Member: memberOf(obj, pod), At: at, Line: line, QuietSeconds: quiet}
	}
	return nil
}

// maxOutputLine bounds the line status shows of the output.
const maxOutputLine = 160

// String says the last output, and, once rank 0 has been quiet for
// QuietAfter, that the job may be stuck and how to see which pod stopped
// first; name is the job's.
//
//	master-0 wrote 12s ago: [rank0] step 4021 | loss 2.3012
//	master-0 has written nothing for 42m (its last line: [rank0] step 4021 | loss 2.3012): the job may be stuck; generator logs demo --tail 1 --timestamps shows each pod's last line and when it wrote it
func (o Output) String(name string) string {
	line := strings.TrimSpace(o.Line)
	if len(line) > maxOutputLine {
		line = strings.ToValidUTF8(line[:maxOutputLine], "") + "…"
	}
	quiet := time.Duration(o.QuietSeconds) * time.Second
	if quiet < QuietAfter {
		return fmt.Sprintf("%s wrote %s ago: %s", o.Member, duration.HumanDuration(quiet), line)
	}
	return fmt.Sprintf("%s has written nothing for %s (its last line: %s): the job may be stuck; generator logs %s --tail 1 --timestamps shows each pod's last line and when it wrote it",
		o.Member, duration.HumanDuration(quiet), line, name)
}
