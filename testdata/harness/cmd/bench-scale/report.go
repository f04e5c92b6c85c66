//go:build linux

package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// cell says a median in a table's cell: time, requests (those of logs
// apart), megabytes read, peak memory.
func cell(m sample) string {
	if len(m.Tell) > 0 {
		tell := slices.Sorted(slices.Values(m.Tell))
		return fmt.Sprintf("%.1f requests a minute while nothing changes; a change told after %.2f s (the median of %d), %.2f s at most",
			m.PerMinute, tell[len(tell)/2], len(tell), tell[len(tell)-1])
	}
	text := fmt.Sprintf("%.2f s", m.Seconds)
	if m.Counted {
		requests := fmt.Sprint(m.Requests)
		if m.LogRequests > 0 {
			requests = fmt.Sprintf("%d+%d log", m.Requests-m.LogRequests, m.LogRequests)
		}
		text += fmt.Sprintf(", %s req, %.2f MB", requests, float64(m.Read)/1e6)
	}
	return text + fmt.Sprintf(", %d MiB", m.RSSKiB/1024)
}

// table writes the results as Markdown: for each kind, a row per command
// and tool, a column per number of pods; then the namespaces, a column
// per number of jobs.
func table(results []result) string {
	var b strings.Builder
	b.WriteString("Each cell: median wall time, requests to the API server (those for logs apart: N+M log), megabytes read, peak resident memory. kubectl's requests are counted in a run of its own (-v=6).\n")
	type group struct {
		title string
		// of is the row and the column of a result, false for one not
		// of the group.
		of func(result) (string, int, bool)
	}
	var groups []group
	for _, k := range kinds {
		groups = append(groups, group{k.kind + ", by pods", func(r result) (string, int, bool) { return r.Command, r.Pods, r.Kind == k.kind }})
	}
	groups = append(groups, group{"a namespace, by jobs", func(r result) (string, int, bool) { return r.Command, r.Jobs, r.Jobs > 0 }},
		group{"a follower, of a job that changes only when it is stopped and resumed", func(r result) (string, int, bool) {
			return r.Command, r.Pods, len(r.Median.Tell) > 0
		}})
	for _, g := range groups {
		var sizes []int
		type row struct{ command, tool string }
		var rows []row
		cells := map[row]map[int]string{}
		for _, r := range results {
			command, size, ok := g.of(r)
			if !ok {
				continue
			}
			if !slices.Contains(sizes, size) {
				sizes = append(sizes, size)
			}
			key := row{command, r.Tool}
			if cells[key] == nil {
				cells[key] = map[int]string{}
				rows = append(rows, key)
			}
			text := cell(r.Median)
			if r.KubectlRequests > 0 {
				text = strings.Replace(text, " s,", fmt.Sprintf(" s, %d req,", r.KubectlRequests), 1)
			}
			cells[key][size] = text
		}
		if len(rows) == 0 {
			continue
		}
		slices.Sort(sizes)
		fmt.Fprintf(&b, "\n### %s\n\n| command | tool |", g.title)
		for _, n := range sizes {
			fmt.Fprintf(&b, " %d |", n)
		}
		b.WriteString("\n|:---|:---|" + strings.Repeat("---:|", len(sizes)) + "\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s |", r.command, r.tool)
			for _, n := range sizes {
				text := cells[r][n]
				if text == "" {
					text = "-"
				}
				fmt.Fprintf(&b, " %s |", text)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// The plots: which commands each shows (those whose cost could grow; the
// others are in the tables), a color each, and a dash for each tool.
var (
	timed     = []string{"status", "list", "logs", "delete", "submit --wait until Running"}
	counted   = []string{"status", "list", "logs", "logs -f", "delete", "submit --wait until Running"}
	listed    = []string{"list", "list -o json", "list -A", "status", "completion"}
	toolDash  = map[string]int{"generator": 1, "before": 2, "kubectl": 3}
	toolTitle = map[string]string{"generator": "", "before": " (before)", "kubectl": " (kubectl)"}
	colors    = map[string]int{"status": 1, "list": 2, "logs": 3, "delete": 4, "submit --wait until Running": 5, "logs -f": 6,
		"list -o json": 7, "list -A": 8, "completion": 9}
)

// unasked are the requests of a run but those for the logs the user asked
// for (logs, logs -f): what must not grow with the pods.
func unasked(r result) int {
	if r.Command == "logs" || r.Command == "logs -f" {
		return r.Median.Requests - r.Median.LogRequests
	}
	return r.Median.Requests
}

// plot draws, with gnuplot, into scale.png: for a PyTorchJob in an
// AppWrapper, the median time of the commands (timed) and their requests
// but those for the logs asked for (counted, unasked), against its pods, the earlier commit's
// dashed and kubectl's dotted; and into jobs.png, the time of the commands
// that read many jobs (listed) against the jobs of a namespace.
func plot(results []result, out string) error {
	if _, err := exec.LookPath("gnuplot"); err != nil {
		return nil // the tables say it all
	}
	data := filepath.Join(out, "plot")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	// series writes the points of the commands of a plot, a file a
	// command and tool, and gives its lines.
	series := func(name string, column int, commands []string, of func(result) (int, bool), tools ...string) []line {
		var lines []line
		for i, command := range commands {
			for _, tool := range tools {
				var b strings.Builder
				for _, r := range results {
					if size, ok := of(r); ok && r.Command == command && r.Tool == tool {
						fmt.Fprintf(&b, "%d %f %d\n", size, r.Median.Seconds, unasked(r))
					}
				}
				if b.Len() == 0 {
					continue
				}
				file := filepath.Join(data, fmt.Sprintf("%s-%d-%s.dat", name, i, tool))
				if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
					log.Print(err)
					continue
				}
				lines = append(lines, line{file: file, title: command + toolTitle[tool], column: column, color: colors[command], dash: toolDash[tool]})
			}
		}
		return lines
	}
	ofPods := func(r result) (int, bool) { return r.Pods, r.Kind == "PyTorchJob" }
	time := series("time", 2, timed, ofPods, "generator", "before", "kubectl")
	requests := series("requests", 3, counted, ofPods, "generator", "before")
	jobs := series("jobs", 2, listed, func(r result) (int, bool) { return r.Jobs, r.Jobs > 0 }, "generator", "before", "kubectl")
	if len(time) == 0 || len(jobs) == 0 {
		return nil
	}
	script := fmt.Sprintf(`set terminal pngcairo size 1400,520 font ",11"
set output %q
set multiplot layout 1,2 title "a PyTorchJob in an AppWrapper, by its pods: the generator (solid), the commit before (dashed), kubectl (dotted); simulated cluster, 2 cores"
set logscale x 2
set xtics (1, 64, 256, 1024)
set grid
set key top left font ",9"
set xlabel "pods"
set logscale y
set ylabel "median wall time (s)"
plot %s
set ylabel "requests to the API server, but the logs asked for"
set logscale y
plot %s
unset multiplot
set terminal pngcairo size 900,480 font ",11"
set output %q
set title "commands that read many jobs, by the jobs of the namespace"
set logscale x 10
set xtics (10, 1000, 5000)
set logscale y
set xlabel "jobs in the namespace"
set ylabel "median wall time (s)"
plot %s
`, filepath.Join(out, "scale.png"), plotEach(time), plotEach(requests), filepath.Join(out, "jobs.png"), plotEach(jobs))
	cmd := exec.Command("gnuplot")
	cmd.Stdin = strings.NewReader(script)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gnuplot: %v: %s", err, output)
	}
	return nil
}

// line is a line of a plot: the file of its points (size, seconds,
// requests), the column plotted, its title, its color and its dash.
type line struct {
	file, title         string
	column, color, dash int
}

// plotEach is a plot command's list of lines.
func plotEach(lines []line) string {
	var parts []string
	for _, l := range lines {
		parts = append(parts, fmt.Sprintf("%q using 1:%d with linespoints lc %d dt %d lw 2 title %q", l.file, l.column, l.color, l.dash, l.title))
	}
	return strings.Join(parts, ", \\\n  ")
}
