package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// launchPod is the master of the AppWrapper demo, whose container pytorch
// runs a launch script with a setup command, in the given state.
func launchPod(state string) string {
	script := "echo \"Pod ${RANK} of ${WORLD_SIZE}\"\ncd /no/such/folder\necho \"Starting torchrun on ${WORLD_SIZE} pods\"\ntorchrun --nnodes=${WORLD_SIZE} train.py\n"
	return strings.Replace(ptjPod("master", 0, "m-1", "{name: pytorch, state: "+state+"}"),
		"spec: {containers: [{name: pytorch, image: busybox}]", "spec: {containers: [{name: pytorch, image: busybox, command: [sh, -c, "+strconv.Quote(script)+"]}]", 1)
}

// What the shell says of the setup command, after torchrun's announcement,
// as it came on the simulated cluster.
const setupLog = "Pod 0 of 2\nStarting torchrun on 2 pods\nsh: 2: cd: can't cd to /no/such/folder\nstep 1\n"

const setupSaid = `master-0: setup command "cd /no/such/folder" failed: sh: 2: cd: can't cd to /no/such/folder; the launch went on (setupErrexit: true stops the pod at a failed setup command)`

// status says the setup commands that failed in the pods there are.
func TestStatusSaysASetupCommandFailed(t *testing.T) {
	client := cluster(t, nil, appWrapper("{phase: Running}"), launchPod("{running: {}}"))
	client.LogSource = &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": setupLog}}
	s, err := client.Status(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"})
	require.NoError(t, err)
	require.Len(t, s.Setup, 1)
	require.Contains(t, s.Lines(), "\n  setup:     "+setupSaid+"\n")
}

// submit --wait says a setup command that failed, though the job goes on
// to succeed.
func TestFollowSaysASetupCommandFailed(t *testing.T) {
	client, next := timeline(t, appWrapper,
		[]string{"{phase: Running}", launchPod("{running: {}}")},
		[]string{"{phase: Succeeded}", launchPod("{terminated: {exitCode: 0, reason: Completed}}")},
	)
	client.LogSource = &fakeLogs{logs: map[string]string{"demo-master-0/pytorch": setupLog}}
	client.Poll = time.Millisecond
	var noticed []string
	last, err := client.Follow(context.Background(), Ref{Kind: "AppWrapper", Namespace: "ml", Name: "demo"}, func(Status) { next() }, func(n Noticed) {
		require.NotNil(t, n.Setup, "no failure: %v", n.Failure)
		noticed = append(noticed, n.Setup.Tell(n.Attempt, n.Of))
	})
	require.NoError(t, err)
	require.Equal(t, Succeeded, last.State)
	require.Equal(t, []string{"attempt 1: " + setupSaid}, noticed)
}
