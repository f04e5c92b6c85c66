package render_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/golden"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
)

// shellWords splits a command line with a real sh, globbing off and without
// running anything: the truth that torchwrap.words must match.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -f; set -- "+line+"\nfor w in \"$@\"; do printf '%s\\0' \"$w\"; done").Output()
	require.NoError(t, err, line)
	if len(out) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// In T9k's torchrun mode, mainProgram becomes the container's args: split into
// words exactly as sh splits it (nothing is expanded: the inputs hold no $).
// One difference: an unquoted newline separates words, where sh would end the
// command there.
func TestMainProgramIsSplitAsShellSplitsIt(t *testing.T) {
	require.Equal(t, []string{"train.py", "--tab", "--newline"}, args(t, "train.py\t--tab\n--newline"))
	for _, line := range []string{
		`train.py`,
		`train.py --epochs 3   --lr 0.1`,
		"train.py\t--tab",
		`train.py --name "my run" --tag 'a b'`,
		`train.py --empty "" --also ''`,
		`train.py a\ b c\\d`,
		`train.py "quote \" inside" 'single '\''inside'`,
		`train.py "back\\slash" "keep \x and \n"`,
		"train.py --line \\\n--continued",
		`train.py "\$HOME stays" '$HOME stays'`,
		`-m package.module --flag=val`,
		`train.py ünïcødé "日本語 text" ✓`,
		`train.py mi"xed"'quo'tes`,
	} {
		t.Run(line, func(t *testing.T) {
			require.Equal(t, shellWords(t, line), args(t, line))
		})
	}
}

// args renders a PyTorchTrainingJob in torchrun mode and returns its
// training container's args.
func args(t *testing.T, mainProgram string) []string {
	t.Helper()
	in := &settings.Input{Values: map[string]any{
		"jobKind": "PyTorchTrainingJob", "jobName": "words", "containerImage": "busybox", "mainProgram": mainProgram,
	}}
	result, err := render.Render(in)
	require.NoError(t, err)
	job := golden.Objects(t, result.Manifest)[0]["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)["template"].(map[string]any)
	replica := job["spec"].(map[string]any)["replicaSpecs"].([]any)[0].(map[string]any)
	container := replica["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var words []string
	for _, a := range container["args"].([]any) {
		words = append(words, a.(string))
	}
	return words
}

func TestMainProgramWithAnOpenQuoteIsRefused(t *testing.T) {
	for line, want := range map[string]string{
		`train.py "open`: `mainProgram: a " quote is not closed`,
		`train.py 'open`: `mainProgram: a ' quote is not closed`,
		`train.py end\`:  `mainProgram: it ends with a backslash`,
	} {
		in := &settings.Input{Values: map[string]any{
			"jobKind": "DeepSpeedJob", "jobName": "words", "containerImage": "busybox", "mainProgram": line,
		}}
		_, err := render.Render(in)
		require.ErrorContains(t, err, want)
	}
	// sh refuses the open quotes too; a final backslash it keeps as it is,
	// which the generator refuses as too easily a mistake.
	require.Error(t, exec.Command("sh", "-n", "-c", `set -- train.py "open`).Run())
	require.Error(t, exec.Command("sh", "-n", "-c", `set -- train.py 'open`).Run())
}
