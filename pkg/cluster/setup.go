package cluster

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/torchwrap/generator/pkg/cluster/podwatch"
	"github.com/torchwrap/generator/pkg/failure"
)

// The start of a training container's log that is read for the shell's
// lines of failed setup commands: at most setupBytes, and after the line
// that announces torchrun (the shell writes its errors to standard error,
// which may come after it) afterStart more lines, or afterStartTime more
// of a log that is followed.
const (
	setupBytes     = 1 << 20
	afterStart     = 50
	afterStartTime = 30 * time.Second
)

// launchOf is the launch script of a pod's container, when it runs one.
func launchOf(pod *corev1.Pod, container string) (failure.Launch, bool) {
	for _, c := range pod.Spec.Containers {
		if c.Name == container {
			return failure.LaunchOf(c.Command, c.Args)
		}
	}
	return failure.Launch{}, false
}

// setupErrors reads the start of the log of a pod's container, which runs
// launch, and calls found with each setup command that failed. Following,
// it reads the log as it is written, until the setup is over.
func (c *Client) setupErrors(ctx context.Context, pod *corev1.Pod, container, member string, launch failure.Launch, follow bool, found func(failure.SetupError)) {
	if c.LogSource == nil {
		return
	}
	limit := int64(setupBytes)
	rc, err := c.LogSource.Log(ctx, pod.Namespace, pod.Name, podwatch.LogOptions{Container: container, Follow: follow, LimitBytes: &limit})
	if err != nil {
		return
	}
	defer rc.Close()
	scanner := bufio.NewScanner(io.LimitReader(rc, limit))
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	after := -1
	for scanner.Scan() && after != 0 {
		line := scanner.Text()
		if e, ok := launch.Error(pod.Name, member, line); ok {
			found(e)
		}
		switch {
		case after > 0:
			after--
		case launch.Started(line):
			after = afterStart
			if follow {
				// A program that prints little would hold the log open.
				stop := time.AfterFunc(afterStartTime, func() { rc.Close() })
				defer stop.Stop()
			}
		}
	}
}

// scan is what the setup commands that failed in a pod are read from: its
// training container, which runs the chart's launch script and has
// started, in the pod of node rank 0. Every pod runs the same setup
// commands, so one that fails everywhere shows there, and status and a
// follower read one log whatever the number of pods; a command that
// fails in some pods alone is not seen unless setupErrexit makes it the
// pod's failure.
type scan struct {
	container string
	launch    failure.Launch
	status    corev1.ContainerStatus
	member    string
}

// scanOf is the scan of a pod of the job; false when its log is not read
// for the setup commands.
func scanOf(obj *unstructured.Unstructured, pod *corev1.Pod) (scan, bool) {
	k := kindOf(obj)
	if m, known := k.member(obj.Object, pod); !known || m.Rank != 0 {
		return scan{}, false
	}
	name := k.trainingContainer(obj.Object, pod)
	status, ok := podwatch.ContainerStatus(pod, name)
	launch, isLaunch := launchOf(pod, name)
	if !ok || !isLaunch || status.State.Running == nil && status.State.Terminated == nil {
		return scan{}, false
	}
	return scan{container: name, launch: launch, status: status, member: memberOf(obj, pod)}, true
}

// setupOf reads, for Status, the setup commands that failed in the job's
// pods, as scanOf says which.
func (c *Client) setupOf(ctx context.Context, obj *unstructured.Unstructured, podList []corev1.Pod) []failure.SetupError {
	var found []failure.SetupError
	for i := range podList {
		pod := &podList[i]
		if sc, ok := scanOf(obj, pod); ok {
			c.setupErrors(ctx, pod, sc.container, sc.member, sc.launch, false, func(e failure.SetupError) { found = append(found, e) })
		}
	}
	slices.SortFunc(found, func(a, b failure.SetupError) int {
		return cmp.Or(strings.Compare(a.Pod, b.Pod), strings.Compare(a.Line, b.Line))
	})
	return found
}
