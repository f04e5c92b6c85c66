package failure

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Cause is what a failed container's last lines say of why it failed: the
// rank torchrun found failing first, and that rank's own error; the shell's
// line when a command of the launch script failed; torchrun's own error
// when it failed itself (a rendezvous that timed out).
type Cause struct {
	// Rank and LocalRank are the global and local rank of the process that
	// failed, from torchrun's "Root Cause" summary; nil without one.
	Rank      *int `json:"rank,omitempty"`
	LocalRank *int `json:"localRank,omitempty"`
	// ExitCode is that process's exit code; Signal the signal that ended it
	// instead (SIGKILL).
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Others counts the other processes torchrun saw fail.
	Others int `json:"others,omitempty"`
	// Error is the program's own error: the last line of its traceback
	// (ZeroDivisionError: division by zero), or Python's line when it could
	// not start the program.
	Error string `json:"error,omitempty"`
	// More are the lines of its message after the first, up to
	// messageLines: NCCL's "Last error: Duplicate GPU detected ..." after
	// "invalid usage".
	More []string `json:"more,omitempty"`
	// Shell is the first error line of the shell that runs the launch
	// script: a setup command that failed (sh: 3: cd: can't cd to /data).
	Shell string `json:"shell,omitempty"`
	// Torchrun is torchrun's own error, when it failed before or without its
	// workers (torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError).
	Torchrun string `json:"torchrun,omitempty"`
	// Consequence is the kind of error that Error or Torchrun is when it
	// follows from another process's failure (consequences): "NCCL
	// timeout", "lost peer"; "" for an error of the process's own.
	Consequence string `json:"consequence,omitempty"`
	// At is when that process failed, as torchrun's summary says (its
	// time field, of the container's clock); zero without one.
	At time.Time `json:"at,omitzero"`
}

// Empty tells whether the lines said nothing of the failure.
func (c Cause) Empty() bool {
	return c.Rank == nil && c.ExitCode == nil && c.Error == "" && c.Shell == "" && c.Torchrun == ""
}

var (
	// A field of torchrun's summary of a failed process:
	//   rank      : 1 (local_rank: 1)
	summaryField = regexp.MustCompile(`^\s+(\w+)\s*: (.*)$`)
	rankField    = regexp.MustCompile(`^(\d+) \(local_rank: (\d+)\)`)
	exitField    = regexp.MustCompile(`^(-?\d+)`)
	signalField  = regexp.MustCompile(`^Signal \d+ \((SIG\w+)\)`)
	// The error line of a shell: dash's "sh: 3: cd: can't cd to /data",
	// bash's "sh: line 3: cd: /data: No such file or directory".
	shellError = regexp.MustCompile(`^(?:/bin/|/usr/bin/)?(?:sh|bash|dash): (?:line )?\d+: .+`)
	// Python's own line when it cannot run the program:
	//   /usr/bin/python3: can't open file '/app/train.py': [Errno 2] No such file or directory
	pythonError = regexp.MustCompile(`^\S*python[\d.]*: .+`)
	// The prefix torchrun writes before a worker's lines with --tee or
	// --local-ranks-filter: [rank1]: or [default1]:.
	workerPrefix = regexp.MustCompile(`^\[(?:rank|default)\d+\]:`)
	// torchrun's line as it stops the processes of a pod once one
	// failed: "Sending process 522 closing signal SIGTERM".
	closingSignal = regexp.MustCompile(`Sending process (\d+) closing signal`)
	// The pid of a failed process, in its summary's exit code field:
	//   exitcode  : -15 (pid: 522)
	pidField = regexp.MustCompile(`\(pid: (\d+)\)`)
	// A line that is no part of an error's message: a log record (glog's
	// W1128 07:55:33.952000 ..., bracketed or not; Python logging's
	// ERROR:torch...), or a line of a traceback (its start, a frame's
	// File line, its code, indented by four), which another process may
	// write amid the message where torchrun does not prefix their lines.
	notMessage = regexp.MustCompile(`^(\[?[DIWEF]\d{4} \d\d:|(DEBUG|INFO|WARNING|ERROR|CRITICAL):|Traceback |During handling |The above exception |\[|=+$|-+$|\s+File "| {4})`)
	// PyTorch's and NCCL's words of advice in an error's message, which
	// every error of its kind repeats: left out of the message told.
	advice = regexp.MustCompile(`^(CUDA kernel errors might be asynchronously reported|For debugging consider passing CUDA_LAUNCH_BLOCKING|Compile with .TORCH_USE_CUDA_DSA.|nccl[A-Z]\w*: )`)
	// The C++ runtime's lines when an exception ends a process (NCCL's
	// watchdog, before the SIGABRT of its error handling):
	//   terminate called after throwing an instance of 'c10::DistBackendError'
	//     what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: ...
	terminate = regexp.MustCompile(`^terminate called after throwing an instance of '([^']+)'`)
	what      = regexp.MustCompile(`^\s*what\(\):\s+(.+)`)
)

// consequences are the errors of a process that failed because another
// did, as PyTorch, NCCL, gloo and the c10d store write them, by kind (one
// and many): counted apart from the cause, never taken for it. The first
// kind that matches is the error's.
var consequences = []kind{
	// NCCL's watchdog, once a collective waited past the process group's
	// timeout: "Watchdog caught collective operation timeout: WorkNCCL(...)
	// ran for 600020 milliseconds before timing out".
	{"NCCL timeout", "NCCL timeouts", regexp.MustCompile(`Watchdog caught collective operation timeout`)},
	// A process group or communicator aborted, as another rank failed.
	{"aborted process group", "aborted process groups", regexp.MustCompile(`(?i)communicator was aborted|process group .*\baborted|ProcessGroupNCCL is aborted`)},
	// The c10d store (rank 0's agent's TCPStore) gone with its pod.
	{"lost store", "lost stores", regexp.MustCompile(`TCPStore|DistStoreError|(recvValue|sendBytes|recvBytes) failed`)},
	// torchrun's rendezvous, closed by another pod's agent as it failed.
	{"closed rendezvous", "closed rendezvous", regexp.MustCompile(`RendezvousClosedError`)},
	// A peer gone: gloo's "Connection closed by peer", NCCL's
	// ncclRemoteError ("a remote process exiting prematurely").
	{"lost peer", "lost peers", regexp.MustCompile(`(?i)connection (reset|closed) by peer|broken pipe|remote process exit|ncclRemoteError|connection refused|got 0 bytes`)},
	// gloo's "Timed out waiting 1800000ms for recv operation to complete".
	{"timeout", "timeouts", regexp.MustCompile(`(?i)socket timeout|timed out`)},
}

// kind is a kind of failure, as it is counted (one and many), and the
// lines of it.
type kind struct {
	one, many string
	match     *regexp.Regexp
}

// consequenceOf is the kind of consequence an error's lines are; "" for
// none.
func consequenceOf(lines ...string) string {
	for _, k := range consequences {
		for _, l := range lines {
			if k.match.MatchString(l) {
				return k.one
			}
		}
	}
	return ""
}

// childFailed is the exception torchrun raises when a worker failed; its
// traceback is torchrun's, not the program's.
const childFailed = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"

// messageLines bounds the lines of an error's message that are told after
// its first: NCCL's "Last error:" and the line after it, CUDA's line after
// "invalid device ordinal".
const messageLines = 3

// summaryEntry is one failed process of torchrun's summary.
type summaryEntry struct {
	rank, localRank, exit *int
	signal, pid           string
	at                    time.Time
}

// Read reads the last lines of a failed container for its cause: torchrun's
// summary of the failed processes ("Root Cause (first observed failure)"),
// the Python tracebacks before it, Python's own error lines and the shell's.
// Lines torchrun prefixes with a worker's name are read without it.
func Read(lines []string) Cause {
	var c Cause
	var root *summaryEntry
	var others []summaryEntry
	var errs []message
	inTraceback, torchrunsOwn, chained := false, false, false
	var entry *summaryEntry
	inRoot := false
	// The processes torchrun stopped itself, once one had failed.
	stopped := map[string]bool{}
	// The message of the error last read goes on in the lines after it,
	// of the same process (its prefix), until one that is no part of it.
	inMessage, messagePrefix, more := false, "", 0
	// The type of the C++ exception that is ending a process, until its
	// what() line.
	thrown := ""
	for _, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		prefix := workerPrefix.FindString(line)
		if prefix != "" {
			line = strings.TrimPrefix(line[len(prefix):], " ")
		}
		if inMessage {
			if prefix == messagePrefix && line != "" && !notMessage.MatchString(line) {
				if !advice.MatchString(line) && more < messageLines {
					more++
					errs[len(errs)-1].add(strings.TrimSpace(line))
				}
				continue
			}
			inMessage = false
		}
		switch {
		case strings.HasPrefix(line, "Traceback (most recent call last):"):
			inTraceback, torchrunsOwn = true, false
			continue
		case strings.HasPrefix(line, "During handling of the above exception") || strings.HasPrefix(line, "The above exception was the direct cause"):
			// The next traceback ends the same process: its error is
			// the one the process ended with.
			chained = len(errs) > 0
			continue
		case inTraceback && (strings.HasPrefix(line, " ") || line == ""):
			if strings.Contains(line, "torch/distributed/run.py") || strings.Contains(line, "torch/distributed/launcher/") {
				torchrunsOwn = true
			}
			continue
		case inTraceback:
			inTraceback = false
			switch {
			case strings.HasPrefix(line, childFailed):
			case torchrunsOwn:
				c.Torchrun = strings.TrimSpace(line)
			case chained:
				errs[len(errs)-1] = message{first: strings.TrimSpace(line)}
				inMessage, messagePrefix, more = true, prefix, 0
			default:
				errs = append(errs, message{first: strings.TrimSpace(line)})
				inMessage, messagePrefix, more = true, prefix, 0
			}
			chained = false
			continue
		}
		if m := closingSignal.FindStringSubmatch(line); m != nil {
			stopped[m[1]] = true
			continue
		}
		if m := terminate.FindStringSubmatch(line); m != nil {
			thrown = m[1]
			continue
		}
		if m := what.FindStringSubmatch(line); m != nil && thrown != "" {
			errs = append(errs, message{first: thrown + ": " + strings.TrimSpace(m[1])})
			thrown = ""
			continue
		}
		switch {
		case c.Shell == "" && shellError.MatchString(line):
			c.Shell = line
		case pythonError.MatchString(line):
			errs = append(errs, message{first: line})
		case strings.HasPrefix(line, "Root Cause (first observed failure):"):
			inRoot = true
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]:"):
			entry = &summaryEntry{}
			if inRoot {
				root = entry
			} else {
				others = append(others, summaryEntry{})
				entry = &others[len(others)-1]
			}
		case strings.HasPrefix(line, "====") || strings.HasPrefix(line, "----"):
			entry = nil
		case entry != nil:
			entry.read(line)
		}
	}
	c.choose(root, others, stopped, errs)
	return c
}

// choose sets the cause from what Read read: torchrun's root cause
// (root), the other processes of its summary, those it stopped itself
// (by pid), and the errors of the processes' own, the first first.
func (c *Cause) choose(root *summaryEntry, others []summaryEntry, stopped map[string]bool, errs []message) {
	// A failure of torchrun's own, once its workers had failed, is the
	// ChildFailedError above; the last one before it is not.
	if root != nil || len(errs) > 0 {
		c.Torchrun = ""
	}
	cause := firstCause(errs)
	c.Error, c.More = cause.first, cause.more
	chosen := root
	if c.Error == "" || cause.consequence() {
		if killed := killedOther(root, others, stopped); killed != root {
			chosen, c.Error, c.More = killed, "", nil
		}
	}
	if chosen != nil {
		c.Rank, c.LocalRank, c.ExitCode, c.Signal, c.At = chosen.rank, chosen.localRank, chosen.exit, chosen.signal, chosen.at
		c.Others = len(others)
	}
	c.Consequence = consequenceOf(append([]string{c.Error, c.Torchrun}, c.More...)...)
	if c.Signal != "" {
		c.ExitCode = nil
	}
}

// killedOther is the process that likely failed first when the one
// torchrun names (root) may only have lost its peer: one killed by a
// signal, but not one that torchrun stopped itself (stopped, by pid), nor
// one stopped by SIGTERM, torchrun's and the kubelet's signal to stop;
// else root.
func killedOther(root *summaryEntry, others []summaryEntry, stopped map[string]bool) *summaryEntry {
	if root != nil && root.signal != "" {
		return root
	}
	for i := range others {
		if o := &others[i]; o.signal != "" && o.signal != "SIGTERM" && !stopped[o.pid] {
			return o
		}
	}
	return root
}

// message is an error's message: its first line, and the lines after it.
type message struct {
	first string
	more  []string
}

// add adds a line to the message; a label that ends with a colon ("Last
// error:") runs on into the line after it.
func (m *message) add(line string) {
	if n := len(m.more); n > 0 && strings.HasSuffix(m.more[n-1], ":") {
		m.more[n-1] += " " + line
		return
	}
	m.more = append(m.more, line)
}

// read reads a field of a summary entry.
func (e *summaryEntry) read(line string) {
	m := summaryField.FindStringSubmatch(line)
	if m == nil {
		return
	}
	switch m[1] {
	case "time":
		// torchrun's time of the failure, of the container's clock:
		// 2026-11-28_07:55:33, UTC in most images.
		if at, err := time.Parse("2006-01-02_15:04:05", strings.TrimSpace(m[2])); err == nil {
			e.at = at
		}
	case "rank":
		if r := rankField.FindStringSubmatch(m[2]); r != nil {
			e.rank, e.localRank = number(r[1]), number(r[2])
		}
	case "exitcode":
		if x := exitField.FindStringSubmatch(m[2]); x != nil {
			e.exit = number(x[1])
		}
		if p := pidField.FindStringSubmatch(m[2]); p != nil {
			e.pid = p[1]
		}
	case "traceback":
		if s := signalField.FindStringSubmatch(m[2]); s != nil {
			e.signal = s[1]
		}
	}
}

// consequence tells whether the message is of an error that follows from
// another process's failure.
func (m message) consequence() bool {
	return consequenceOf(append([]string{m.first}, m.more...)...) != ""
}

// firstCause is the first error that is not a consequence of another's,
// else the first.
func firstCause(errs []message) message {
	for _, e := range errs {
		if !e.consequence() {
			return e
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return message{}
}

func number(s string) *int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil
	}
	return &n
}
