package failure

import (
	"regexp"
	"slices"
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
	// Partial says that lines which may go on with the error's message
	// were left out: nothing prefixed them with their process (torch 1.13
	// without --tee), so they may be another process's.
	Partial bool `json:"partial,omitempty"`
	// Unattributed says that the error is one of several, of different
	// words, that no prefix tells apart: it may be another process's than
	// the rank's.
	Unattributed bool `json:"unattributed,omitempty"`
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
	// Python's line of the error that ends a traceback: the exception's
	// class, by a name of its own (a capital first) or its module's
	// (torch.OutOfMemoryError, socket.gaierror), then its message: not a
	// line another process printed amid the traceback (mp: rank 6 up).
	errorLine = regexp.MustCompile(`^(?:(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*|[A-Z]\w*)(?::|$)`)
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

// process is whose a line is, as its prefixes say: torchrun's with --tee,
// [default1]: (its local rank), and torch 2.x's before each line of a
// traceback once the process group is up, [rank1]: (its global rank); both,
// in that order, with --tee on torch 2.x. Lines without either are
// torchrun's own, or a process's that nothing prefixed (torch 1.13 without
// --tee, torch 2.x before its process group), which cannot be told apart.
type process struct {
	local, global *int
}

var (
	localPrefix  = regexp.MustCompile(`^\[default(\d+)\]:`)
	globalPrefix = regexp.MustCompile(`^\[rank(\d+)\]: ?`)
)

// whose splits a line into whose it is and the line without its prefixes.
func whose(line string) (process, string) {
	var p process
	if m := localPrefix.FindStringSubmatch(line); m != nil {
		p.local, line = number(m[1]), line[len(m[0]):]
	}
	if m := globalPrefix.FindStringSubmatch(line); m != nil {
		p.global, line = number(m[1]), line[len(m[0]):]
	}
	return p, line
}

// key tells processes apart: "" for lines without a prefix.
func (p process) key() string {
	key := ""
	if p.local != nil {
		key += "default" + strconv.Itoa(*p.local)
	}
	if p.global != nil {
		key += "rank" + strconv.Itoa(*p.global)
	}
	return key
}

// of tells whether the process is the one of a summary's entry: its local
// rank or its global rank, as its prefixes say.
func (p process) of(e *summaryEntry) bool {
	same := func(a, b *int) bool { return a != nil && b != nil && *a == *b }
	return e != nil && (same(p.local, e.localRank) || same(p.global, e.rank))
}

// stream is what Read follows of one process's lines (by their prefix):
// a traceback under way, and the message of its last error, which its next
// lines may go on with.
type stream struct {
	inTraceback, torchrunsOwn, chained bool
	// last is the process's last error; open while its next lines may go
	// on with its message.
	last *message
	open bool
	// thrown is the type of the C++ exception that is ending the process,
	// until its what() line.
	thrown string
}

// Read reads the last lines of a failed container for its cause: torchrun's
// summary of the failed processes ("Root Cause (first observed failure)"),
// the Python tracebacks before it, Python's own error lines and the shell's.
// A process's error is made of its own lines: those of its prefix
// (whose), where torchrun or torch prefixed them; unprefixed, a message's
// lines after its first cannot be told from another process's, and are
// left out (Cause.Partial).
func Read(lines []string) Cause {
	var c Cause
	var root *summaryEntry
	var others []summaryEntry
	var errs []*message
	var entry *summaryEntry
	inRoot := false
	// The processes torchrun stopped itself, once one had failed.
	stopped := map[string]bool{}
	streams := map[string]*stream{}
	for _, raw := range lines {
		p, line := whose(strings.TrimRight(raw, "\r"))
		s := streams[p.key()]
		if s == nil {
			s = &stream{}
			streams[p.key()] = s
		}
		if s.open {
			s.open = false
			if line != "" && !notMessage.MatchString(line) {
				if p.key() == "" {
					// Its own, or another process's: not told.
					s.last.partial = true
					continue
				}
				if !advice.MatchString(line) && len(s.last.more) < messageLines {
					s.last.add(strings.TrimSpace(line))
				}
				s.open = true
				continue
			}
		}
		switch {
		case strings.HasPrefix(line, "Traceback (most recent call last):"):
			s.inTraceback, s.torchrunsOwn = true, false
			continue
		case strings.HasPrefix(line, "During handling of the above exception") || strings.HasPrefix(line, "The above exception was the direct cause"):
			// The next traceback ends the same process: its error is
			// the one the process ended with.
			s.chained = s.last != nil
			continue
		case s.inTraceback && (strings.HasPrefix(line, " ") || line == ""):
			if strings.Contains(line, "torch/distributed/run.py") || strings.Contains(line, "torch/distributed/launcher/") {
				s.torchrunsOwn = true
			}
			continue
		case s.inTraceback && p.key() == "" && !errorLine.MatchString(line):
			// Another process's line amid the traceback.
			continue
		case s.inTraceback:
			s.inTraceback = false
			switch {
			case strings.HasPrefix(line, childFailed):
			case s.torchrunsOwn:
				c.Torchrun = strings.TrimSpace(line)
			case s.chained:
				*s.last = message{process: p, first: strings.TrimSpace(line)}
				s.open = true
			default:
				s.last = &message{process: p, first: strings.TrimSpace(line)}
				errs = append(errs, s.last)
				s.open = true
			}
			s.chained = false
			continue
		}
		if m := terminate.FindStringSubmatch(line); m != nil {
			s.thrown = m[1]
			continue
		}
		if m := what.FindStringSubmatch(line); m != nil && s.thrown != "" {
			errs = append(errs, &message{process: p, first: s.thrown + ": " + strings.TrimSpace(m[1])})
			s.thrown = ""
			continue
		}
		switch {
		case c.Shell == "" && shellError.MatchString(line):
			c.Shell = line
		case pythonError.MatchString(line):
			errs = append(errs, &message{process: p, first: line})
		case p.key() != "":
			// torchrun's own lines, below, are never prefixed.
		case closingSignal.MatchString(line):
			stopped[closingSignal.FindStringSubmatch(line)[1]] = true
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
// (by pid), and the errors of the processes, the first first. The cause is
// torchrun's root cause, with its own error; unless that error is only a
// consequence of another's (a lost peer), or it has none, and another
// process of the summary failed of its own (otherCause).
func (c *Cause) choose(root *summaryEntry, others []summaryEntry, stopped map[string]bool, errs []*message) {
	// A failure of torchrun's own, once its workers had failed, is the
	// ChildFailedError above; the last one before it is not.
	if root != nil || len(errs) > 0 {
		c.Torchrun = ""
	}
	own := ownErrors(root, errs, true)
	chosen, cause := root, firstCause(own)
	c.Unattributed = root != nil && slices.ContainsFunc(own, func(m *message) bool { return m.process.key() == "" && m.first != cause.first })
	if cause.first == "" || cause.consequence() {
		if other := otherCause(root, others, stopped, errs, cause.first != ""); other != nil {
			chosen, cause, c.Unattributed = other, firstCause(ownErrors(other, errs, false)), false
		}
	}
	c.Error, c.More, c.Partial = cause.first, cause.more, cause.partial
	if chosen != nil {
		c.Rank, c.LocalRank, c.ExitCode, c.Signal, c.At = chosen.rank, chosen.localRank, chosen.exit, chosen.signal, chosen.at
		c.Others = len(others)
	}
	c.Consequence = consequenceOf(append([]string{c.Error, c.Torchrun}, c.More...)...)
	if c.Signal != "" {
		c.ExitCode = nil
	}
}

// ownErrors are the errors of the summary's entry e: those of its prefix;
// without one of its own, for torchrun's root cause (root), those that
// nothing prefixed, which may be any process's. Without a summary, every
// error.
func ownErrors(e *summaryEntry, errs []*message, root bool) []*message {
	if e == nil {
		return errs
	}
	var own, unprefixed []*message
	for _, m := range errs {
		switch {
		case m.process.of(e):
			own = append(own, m)
		case m.process.key() == "":
			unprefixed = append(unprefixed, m)
		}
	}
	if len(own) == 0 && root {
		return unprefixed
	}
	return own
}

// otherCause is the process of the summary that likely failed first when
// the one torchrun names (root) may only have lost its peer (its error is
// a consequence: erred), or said nothing: one killed by a signal, but not
// one that torchrun stopped itself (stopped, by pid), nor one stopped by
// SIGTERM, torchrun's and the kubelet's signal to stop; and, when root's
// error is a consequence, one whose own error (of its prefix) is not, or
// that exited with none while the others' errors are told apart by their
// prefixes. nil for none.
func otherCause(root *summaryEntry, others []summaryEntry, stopped map[string]bool, errs []*message, erred bool) *summaryEntry {
	if root != nil && root.signal != "" {
		return nil
	}
	prefixed := slices.ContainsFunc(errs, func(m *message) bool { return m.process.key() != "" })
	for i := range others {
		o := &others[i]
		if o.signal == "SIGTERM" || stopped[o.pid] {
			continue
		}
		if o.signal != "" {
			return o
		}
		if own := firstCause(ownErrors(o, errs, false)); erred && prefixed && !own.consequence() {
			return o
		}
	}
	return nil
}

// message is an error's message, of a process: its first line, and the
// lines after it; partial when lines that may have gone on with it could
// not be told from another process's.
type message struct {
	process process
	first   string
	more    []string
	partial bool
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
func firstCause(errs []*message) message {
	for _, e := range errs {
		if !e.consequence() {
			return *e
		}
	}
	if len(errs) > 0 {
		return *errs[0]
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
