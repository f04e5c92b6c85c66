package importer

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// launch is what a training container runs, read back into settings: the
// setup commands, then torchrun with its options and the program it starts.
type launch struct {
	setup    []string       // setupCommands
	errexit  bool           // setupErrexit: the setup commands between set -e and set +e
	program  string         // mainProgram; "" when no torchrun line was found
	torchrun map[string]any // torchrun's settings: maxRestarts, rdzvBackend, extraOptions
	nproc    string         // --nproc_per_node as written; "" when not given
	// dropped are the options the generator's launch gives itself (how the
	// pods meet), which the settings leave to it.
	dropped []string
	// note says what was read, for the settings' comment.
	note string
}

// ownLines are the lines the generator's launch scripts write around the
// user's commands (torchwrap.launchScript, torchwrap.setupScript, with the
// workspace's unpacking): read back, they are the generator's, not setup
// commands.
var ownLines = regexp.MustCompile(`^(echo "Pod \$\{(RANK|PET_NODE_RANK)\} of \$\{(WORLD_SIZE|PET_NNODES)\}; master at .*"` +
	`|echo "Starting (elastic )?torchrun on .* pods"` +
	`|echo "Sakkara schedules this job: RANK is the rank Sakkara assigned \(\$\{SAKKARA_RANK\}\)"` +
	`|export RANK=\$SAKKARA_RANK` +
	`|cat /tmp/torchwrap-workspace/part-\* \| tar -xzf - \|\| \{ echo "the workspace could not be unpacked into \$PWD" >&2; exit 1; \}` +
	`|echo "Workspace sha256:[0-9a-f]+ \(\d+ files\) unpacked into the working folder")$`)

// readLaunch reads a container's command and args.
func readLaunch(command, args []string) launch {
	words := append(append([]string{}, command...), args...)
	if len(words) == 0 {
		return launch{note: "the container gives no command: the image's own runs"}
	}
	script := ""
	if len(words) >= 3 && isShell(words[0]) && strings.HasSuffix(words[1], "c") && strings.HasPrefix(words[1], "-") {
		script = words[2]
	} else {
		script = joinWords(words)
	}
	return readScript(script)
}

// isShell tells whether a program is a POSIX shell.
func isShell(program string) bool {
	switch path.Base(program) {
	case "sh", "bash", "dash", "ash", "zsh":
		return true
	}
	return false
}

// readScript reads a shell script: the lines before the last torchrun line
// are setup commands, that line torchrun's options and the program. A script
// with no torchrun line, or one that goes on after it, is setup commands
// alone.
func readScript(script string) launch {
	var lines []string
	ours := false
	for _, line := range logicalLines(script) {
		switch {
		case ownLines.MatchString(line):
			ours = true
		case strings.TrimSpace(line) != "":
			lines = append(lines, line)
		}
	}
	last := -1
	for i, line := range lines {
		if _, ok := torchrunStart(line); ok {
			last = i
		}
	}
	if last < 0 {
		setup, on := errexit(lines)
		return launch{setup: setup, errexit: on, note: "no torchrun line: the commands are carried as setupCommands, with no mainProgram"}
	}
	if last != len(lines)-1 {
		setup, on := errexit(lines)
		return launch{setup: setup, errexit: on, note: "the script goes on after torchrun: it is carried whole as setupCommands, with no mainProgram"}
	}
	l := readTorchrun(lines[last])
	l.setup, l.errexit = errexit(lines[:last])
	if ours {
		l.note = "read back from the generator's launch script"
	}
	return l
}

// errexit reads the lines setupErrexit puts around the setup commands, set
// -e before them and set +e after: the commands between them, and true.
func errexit(setup []string) ([]string, bool) {
	if len(setup) >= 2 && setup[0] == "set -e" && setup[len(setup)-1] == "set +e" {
		return setup[1 : len(setup)-1], true
	}
	return setup, false
}

// logicalLines splits a script into its lines, a line that ends in a
// backslash joined to the next, as a shell joins them (the backslash and the
// newline are kept, so that the line is written back as it was).
func logicalLines(script string) []string {
	var lines []string
	joined := ""
	for _, line := range strings.Split(script, "\n") {
		if strings.HasSuffix(line, "\\") {
			joined += line + "\n"
			continue
		}
		lines = append(lines, joined+line)
		joined = ""
	}
	if joined != "" {
		lines = append(lines, strings.TrimSuffix(joined, "\n"))
	}
	return lines
}

// torchrunStart finds where torchrun's options start in a line that runs
// torchrun (torchrun, or python -m torch.distributed.run, after an optional
// exec).
func torchrunStart(line string) (int, bool) {
	words := shellWords(line)
	i := 0
	if i < len(words) && words[i].text == "exec" {
		i++
	}
	switch {
	case i < len(words) && path.Base(words[i].text) == "torchrun":
		return i + 1, true
	case i+2 < len(words) && strings.HasPrefix(path.Base(words[i].text), "python") && words[i+1].text == "-m" && words[i+2].text == "torch.distributed.run":
		return i + 3, true
	}
	return 0, false
}

// torchrunFlags are torchrun's options that take no value.
var torchrunFlags = map[string]bool{"standalone": true}

// programFlags are torchrun's options that say what the program is; they
// start the program's part of the line (mainProgram).
var programFlags = map[string]bool{"m": true, "module": true, "no_python": true, "run_path": true}

// kindOptions are torchrun's options that say how the pods meet, which the
// generator's launch gives itself.
var kindOptions = map[string]bool{
	"nnodes": true, "node_rank": true, "rdzv_endpoint": true, "rdzv_id": true,
	"master_addr": true, "master_port": true, "standalone": true,
}

// readTorchrun reads one torchrun line.
func readTorchrun(line string) launch {
	start, _ := torchrunStart(line)
	words := shellWords(line)
	l := launch{torchrun: map[string]any{}}
	var extra []any
	i := start
	for ; i < len(words); i++ {
		w := words[i].text
		if !strings.HasPrefix(w, "-") {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		name = strings.ReplaceAll(name, "-", "_")
		if programFlags[name] {
			break
		}
		written := w
		if !hasValue && !torchrunFlags[name] && i+1 < len(words) {
			i++
			value = words[i].text
			written = w + "=" + value
		}
		switch {
		case kindOptions[name]:
			l.dropped = append(l.dropped, written)
		case name == "nproc_per_node":
			l.nproc = value
		case name == "max_restarts":
			if n, err := strconv.Atoi(value); err == nil {
				l.torchrun["maxRestarts"] = float64(n)
			} else {
				extra = append(extra, written)
			}
		case name == "rdzv_backend" && value == "c10d":
			l.torchrun["rdzvBackend"] = "c10d"
		case name == "rdzv_backend" && value == "static":
		default:
			extra = append(extra, written)
		}
	}
	if len(extra) > 0 {
		l.torchrun["extraOptions"] = extra
	}
	if i < len(words) {
		l.program = strings.TrimRight(line[words[i].start:], " \t")
	}
	l.note = "read from the torchrun line"
	if len(l.dropped) > 0 {
		l.note += fmt.Sprintf("; the generator's launch gives its own %s", strings.Join(l.dropped, " "))
	}
	return l
}

// word is a word of a shell line: its text once unquoted, and where it starts.
type word struct {
	text  string
	start int
}

// shellWords splits a line into words as a POSIX shell does, without
// expanding anything: blanks separate words; '...' keeps everything; "..."
// keeps everything but \ before $ ` " \; \ outside quotes keeps the next
// character, and a backslash-newline joins lines. An unclosed quote runs to
// the end of the line.
func shellWords(line string) []word {
	var words []word
	var b strings.Builder
	in, start := false, 0
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				b.WriteByte(c)
			}
			continue
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\", line[i+1]) >= 0:
				i++
				b.WriteByte(line[i])
			default:
				b.WriteByte(c)
			}
			continue
		case c == '\\' && i+1 < len(line) && line[i+1] == '\n':
			i++ // a backslash-newline only joins lines
			continue
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, word{text: b.String(), start: start})
				b.Reset()
				in = false
			}
			continue
		}
		if !in {
			in, start = true, i
		}
		switch {
		case c == '\'' || c == '"':
			quote = c
		case c == '\\' && i+1 < len(line):
			i++
			b.WriteByte(line[i])
		default:
			b.WriteByte(c)
		}
	}
	if in {
		words = append(words, word{text: b.String(), start: start})
	}
	return words
}

// plainWord matches words a shell reads as they are.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// joinWords writes words as one shell line that splits back into them.
func joinWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		if plainWord.MatchString(w) {
			quoted[i] = w
		} else {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}
