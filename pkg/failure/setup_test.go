package failure

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The shell's lines of setup commands, told from the program's and from
// torchrun's, in the output of a launch script as the chart writes it.
func TestSetupErrors(t *testing.T) {
	script := `echo "Pod ${RANK} of ${WORLD_SIZE}; master at ${MASTER_ADDR}:${MASTER_PORT}"
cd /tmp/no-such-folder
pip install -r requirements.txt
echo "Starting torchrun on ${WORLD_SIZE} pods"
torchrun --nnodes=${WORLD_SIZE} --node_rank=${RANK} --rdzv_id=101 --rdzv_endpoint="${MASTER_ADDR}:${MASTER_PORT}" train.py
`
	l, ok := LaunchOf([]string{"sh", "-c"}, []string{script})
	require.True(t, ok)
	// The real output of such a script on the simulated cluster.
	var found []SetupError
	started := false
	for _, line := range logLines(t, "setup-command.log") {
		if e, ok := l.Error("job-master-0", "master-0", line); ok {
			found = append(found, e)
		}
		started = started || l.Started(line)
	}
	require.Equal(t, []SetupError{{Pod: "job-master-0", Member: "master-0", Line: "sh: 2: cd: can't cd to /tmp/no-such-folder", Command: "cd /tmp/no-such-folder"}}, found)
	require.True(t, started, "the script's announcement of torchrun")
	require.Equal(t, `master-0: setup command "cd /tmp/no-such-folder" failed: sh: 2: cd: can't cd to /tmp/no-such-folder; the launch went on (setupErrexit: true stops the pod at a failed setup command)`, found[0].String())

	// The first line and torchrun's are no setup command's; bash's words.
	for _, line := range []string{"sh: 1: echo: I/O error", "sh: 5: torchrun: not found", "sh: 9: x: not found", "step 1"} {
		_, ok := l.Setup(line)
		require.False(t, ok, line)
	}
	command, ok := l.Setup("sh: line 3: pip: command not found")
	require.True(t, ok)
	require.Equal(t, "pip install -r requirements.txt", command)
	require.False(t, l.Started("Starting torchrun"), "the announcement whole")

	// Under setupErrexit, the pod stops there; without a program, every
	// line but the first is a setup command's.
	strict, ok := LaunchOf([]string{"/bin/sh", "-c", "echo \"Pod ${RANK}\"\nset -e\ncd /data\nset +e\n"}, nil)
	require.True(t, ok)
	e, ok := strict.Error("p", "", "sh: 3: cd: can't cd to /data")
	require.True(t, ok)
	require.Equal(t, `pod p: setup command "cd /data" failed: sh: 3: cd: can't cd to /data; setupErrexit stops the pod there`, e.String())
	require.False(t, strict.Started("anything"))

	// A container that runs no launch script.
	_, ok = LaunchOf([]string{"python", "train.py"}, nil)
	require.False(t, ok)
}
