package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/torchwrap/generator/pkg/cluster"
	"github.com/torchwrap/generator/pkg/failure"
)

// progress writes the readings of a followed job: on a terminal, one line
// rewritten in place, and a new one when the state changes; elsewhere (a
// log, a pipe), a line each time the state changes.
type progress struct {
	w io.Writer
	// width is the terminal's, 0 when w is not a terminal.
	width int
	// said is what the last line said: state, phase, reason, retries.
	said string
	// open is whether a live line is on the screen, without its newline.
	open bool
}

func (p *progress) report(s cluster.Status) {
	said := fmt.Sprint(s.State, s.Phase, s.Reason, s.Retries)
	changed := said != p.said
	p.said = said
	if p.width == 0 {
		if changed {
			fmt.Fprintln(p.w, s.Line())
		}
		return
	}
	if p.open && changed {
		fmt.Fprintln(p.w)
	}
	// Back to the start of the line, which is cleared; one column short of
	// the width, so that the terminal does not wrap it.
	fmt.Fprint(p.w, "\r\x1b[K"+cluster.Cut(s.Line(), p.width-1))
	p.open = true
}

// notice writes a failure of the job, noticed as it happened, after the
// live line.
func (p *progress) notice(n cluster.Noticed) {
	p.end()
	fmt.Fprintln(p.w, noticed(n))
}

// noticed says a failure noticed while a job is followed, in a few lines:
// what failed, in which attempt, and the lines of its log that say why.
func noticed(n cluster.Noticed) string {
	if n.Setup != nil {
		return n.Setup.Tell(n.Attempt, n.Of)
	}
	if n.More {
		return failure.TellMore(n.Attempt, n.Of)
	}
	if l := n.Lost; l != nil {
		if l.Back {
			return fmt.Sprintf("the cluster at %s answers again, after %s; following on", l.Server, time.Since(l.Since).Round(time.Second))
		}
		return fmt.Sprintf("the cluster at %s cannot be reached since %s (%v); going on trying until %s (--outage %v)",
			l.Server, l.Since.Format(time.TimeOnly), l.Err, l.Until.Format(time.TimeOnly), l.Until.Sub(l.Since))
	}
	text := failure.Tell(n.Attempt, n.Of, n.Failure)
	if n.NotKept != nil {
		text += "\n  (not kept on this machine: " + n.NotKept.Error() + ")"
	}
	return text
}

// end ends the live line.
func (p *progress) end() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// terminalWidth is the width of the terminal w writes to; 0 when it is not
// one.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 1 {
		return width
	}
	return 80
}
