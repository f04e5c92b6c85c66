package fuzz_test

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// shellWords splits a command line with a real sh, globbing off and without
// running anything: the truth that torchwrap.words must match.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	words, err := shellSplit(line)
	require.NoError(t, err, line)
	return words
}

func shellSplit(line string) ([]string, error) {
	out, err := exec.Command("sh", "-c", `set -f; words() { for w in "$@"; do printf '%s\0' "$w"; done; }; words `+line).Output()
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), nil
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
		"train.py a \\\n b",
		"train.py \\\n\\\n",
		"train.py \"x\\\ny\" '' it\"'\"s",
		"train.py \\é \"\\é\" a\rb",
		`train.py "a 'b" c`,
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
	words, err := chartSplit(t, mainProgram)
	require.NoError(t, err)
	return words
}

func chartSplit(t *testing.T, mainProgram string) ([]string, error) {
	t.Helper()
	in := &settings.Input{Values: map[string]any{
		"jobKind": "PyTorchTrainingJob", "jobName": "words", "containerImage": "busybox", "mainProgram": mainProgram,
	}}
	result, err := render.Render(in, nil, nil)
	if err != nil {
		return nil, err
	}
	job := cases.Objects(t, result.Manifest)[0]["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)["template"].(map[string]any)
	replica := job["spec"].(map[string]any)["replicaSpecs"].([]any)[0].(map[string]any)
	container := replica["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var words []string
	for _, a := range container["args"].([]any) {
		words = append(words, a.(string))
	}
	return words, nil
}

// Any command line splits into the words sh gives it, or is refused where sh
// refuses it (an open quote) or keeps what is likely a mistake (a final
// backslash). Lines with what sh would expand, redirect or run are left out, as
// are newlines, where sh would end the command.
func FuzzWords(f *testing.F) {
	for _, s := range []string{`a b`, `"a b" 'c d'`, `a\ b`, `"\"" '\'`, `'`, `"`, `\`, `a"b"'c'`, "a\tb", `"\a\\"`, `''`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if !utf8.ValidString(line) || strings.ContainsAny(line, "$`;|&<>()#~\n") || strings.ContainsFunc(line, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) {
			return
		}
		line = "train.py " + line
		got, err := chartSplit(t, line)
		want, shErr := shellSplit(line)
		switch {
		case err == nil:
			require.NoError(t, shErr, "sh refuses %q", line)
			require.Equal(t, want, got, line)
		case strings.Contains(err.Error(), "ends with a backslash"):
			require.NoError(t, shErr, "sh refuses %q", line)
			require.True(t, strings.HasSuffix(line, `\`) && strings.HasSuffix(want[len(want)-1], `\`), "%q: %v", line, want)
		default:
			require.ErrorContains(t, err, "quote is not closed")
			require.Error(t, shErr, "sh accepts %q", line)
		}
	})
}

func TestMainProgramWithAnOpenQuoteIsRefused(t *testing.T) {
	for line, want := range map[string]string{
		`train.py "open`: `mainProgram: a " quote is not closed`,
		`train.py 'open`: `mainProgram: a ' quote is not closed`,
		`train.py end\`:  `mainProgram: it ends with a backslash`,
		`"a" 'b "c"`:     `mainProgram: a ' quote is not closed`,
		`"a \`:           `mainProgram: a " quote is not closed`,
	} {
		in := &settings.Input{Values: map[string]any{
			"jobKind": "DeepSpeedJob", "jobName": "words", "containerImage": "busybox", "mainProgram": line,
		}}
		_, err := render.Render(in, nil, nil)
		require.ErrorContains(t, err, want)
	}
	// sh refuses the open quotes too; a final backslash it keeps as it is,
	// which the generator refuses as too easily a mistake.
	require.Error(t, exec.Command("sh", "-n", "-c", `set -- train.py "open`).Run())
	require.Error(t, exec.Command("sh", "-n", "-c", `set -- train.py 'open`).Run())
}
