package failure

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Launch is a training container's launch script, as the chart writes it
// (sh -c SCRIPT): its first line says which pod it is, the setup commands
// follow, and, when there is a program, a line that announces torchrun and
// torchrun's. It tells which of the shell's error lines in the container's
// output are of a setup command, which the shell goes on after unless
// setupErrexit put the commands under set -e.
type Launch struct {
	lines []string
	// last is the number of the last setup line (lines count from 1).
	last int
	// started matches the line the script prints before torchrun; nil
	// for a script without a program.
	started *regexp.Regexp
	// errexit: the setup commands run under set -e (setupErrexit).
	errexit bool
}

// errexitLine is the line setupErrexit puts before the setup commands.
const errexitLine = "set -e"

// LaunchOf reads a container's command and arguments as a launch script;
// false when they are not one.
func LaunchOf(command, args []string) (Launch, bool) {
	words := append(append([]string{}, command...), args...)
	if len(words) != 3 || (path.Base(words[0]) != "sh" && path.Base(words[0]) != "bash") || words[1] != "-c" {
		return Launch{}, false
	}
	lines := strings.Split(strings.TrimRight(words[2], "\n"), "\n")
	l := Launch{lines: lines, last: len(lines), errexit: len(lines) > 1 && lines[1] == errexitLine}
	if n := len(lines); n >= 3 && strings.HasPrefix(lines[n-1], "torchrun ") && strings.HasPrefix(lines[n-2], `echo "`) {
		l.last = n - 2
		l.started = announced(lines[n-2])
	}
	return l, true
}

// announced matches what the echo of a script line prints, any variable
// in it standing for any text.
func announced(echo string) *regexp.Regexp {
	text := strings.TrimSuffix(strings.TrimPrefix(echo, `echo "`), `"`)
	variable := regexp.MustCompile(`\\\$\\\{[A-Za-z_][A-Za-z0-9_]*\\\}`)
	return regexp.MustCompile("^" + variable.ReplaceAllString(regexp.QuoteMeta(text), ".*") + "$")
}

// shellLine is the shell's error line with its script line's number:
// dash's "sh: 3: cd: can't cd to /data", bash's "sh: line 3: ...".
var shellLine = regexp.MustCompile(`^(?:/bin/|/usr/bin/)?(?:sh|bash|dash): (?:line )?(\d+): `)

// Setup reads a line of the container's output: when it is the shell's
// line of a failed setup command, the command's line of the script.
func (l Launch) Setup(line string) (string, bool) {
	m := shellLine.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 2 || n > l.last {
		return "", false
	}
	return strings.TrimSpace(l.lines[n-1]), true
}

// Started tells whether the line is the one the script prints once its
// setup commands are done, before torchrun.
func (l Launch) Started(line string) bool {
	return l.started != nil && l.started.MatchString(line)
}

// SetupError is a setup command that failed in a pod, as the shell said it.
type SetupError struct {
	Pod    string `json:"pod"`
	Member string `json:"member,omitempty"`
	// Line is the shell's line; Command the line of the script it names.
	Line    string `json:"line"`
	Command string `json:"command"`
	// Errexit: setupErrexit stopped the pod there; else the launch went on.
	Errexit bool `json:"errexit,omitempty"`
}

// Error finds the shell's line of a failed setup command in a pod's line.
func (l Launch) Error(pod, member, line string) (SetupError, bool) {
	command, ok := l.Setup(line)
	return SetupError{Pod: pod, Member: member, Line: line, Command: command, Errexit: l.errexit}, ok
}

// String says the setup command that failed, where, and what came of it:
//
//	master-0: setup command "cd /data" failed: sh: 2: cd: can't cd to /data; the launch went on (setupErrexit: true stops the pod at a failed setup command)
func (e SetupError) String() string {
	who := Failure{Pod: e.Pod, Member: e.Member}.Who()
	then := "the launch went on (setupErrexit: true stops the pod at a failed setup command)"
	if e.Errexit {
		then = "setupErrexit stops the pod there"
	}
	return fmt.Sprintf("%s: setup command %q failed: %s; %s", who, e.Command, e.Line, then)
}
