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
	groups = append(groups, group{"a namespace, by jobs", func(r result) (string, int, bool) { return r.Command, r.Jobs, r.Jobs > 0 }})
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

// plot draws, with gnuplot, each command's median time and requests (but
// those for logs) against the pods of a PyTorchJob in an AppWrapper, one
// line a command and tool, into scale.png; and the time of the commands
// that read many jobs against the jobs of a namespace, into jobs.png.
func plot(results []result, out string) error {
	if _, err := exec.LookPath("gnuplot"); err != nil {
		return nil // the tables say it all
	}
	data := filepath.Join(out, "plot")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	series := func(prefix string, of func(result) (int, bool)) []line {
		var out []line
		points := map[string]*strings.Builder{}
		for _, r := range results {
			size, ok := of(r)
			if !ok {
				continue
			}
			title := r.Command
			if r.Tool != "generator" {
				title += " (" + r.Tool + ")"
			}
			if points[title] == nil {
				points[title] = &strings.Builder{}
				file := filepath.Join(data, fmt.Sprintf("%s-%02d.dat", prefix, len(out)))
				out = append(out, line{file: file, title: title})
			}
			fmt.Fprintf(points[title], "%d %f %d\n", size, r.Median.Seconds, r.Median.Requests-r.Median.LogRequests)
		}
		for _, l := range out {
			if err := os.WriteFile(l.file, []byte(points[l.title].String()), 0o644); err != nil {
				log.Print(err)
			}
		}
		return out
	}
	pods := series("pods", func(r result) (int, bool) { return r.Pods, r.Kind == "PyTorchJob" })
	jobs := series("jobs", func(r result) (int, bool) { return r.Jobs, r.Jobs > 0 })
	script := fmt.Sprintf(`set terminal pngcairo size 1400,560 font ",10"
set output %q
set multiplot layout 1,2 title "generator on a PyTorchJob in an AppWrapper, by its pods (simulated cluster, 2 cores)"
set logscale x 2
set logscale y
set key outside right top font ",8"
set grid
set xlabel "pods"
set ylabel "median wall time (s)"
plot %s
set ylabel "requests (not counting logs)"
unset logscale y
plot %s
unset multiplot
set output %q
set terminal pngcairo size 900,480 font ",10"
set title "commands that read many jobs, by the jobs of the namespace"
set logscale x 10
set logscale y
set xlabel "jobs in the namespace"
set ylabel "median wall time (s)"
plot %s
`, filepath.Join(out, "scale.png"), plotEach(pods, "1:2"), plotEach(pods, "1:3"), filepath.Join(out, "jobs.png"), plotEach(jobs, "1:2"))
	if len(pods) == 0 || len(jobs) == 0 {
		return nil
	}
	cmd := exec.Command("gnuplot")
	cmd.Stdin = strings.NewReader(script)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gnuplot: %v: %s", err, output)
	}
	return nil
}

// line is a line of a plot: the file of its points, and its title.
type line struct{ file, title string }

// plotEach is a plot command's list of lines, with the columns plotted.
func plotEach(lines []line, columns string) string {
	var parts []string
	for _, l := range lines {
		parts = append(parts, fmt.Sprintf("%q using %s with linespoints title %q", l.file, columns, l.title))
	}
	return strings.Join(parts, ", \\\n  ")
}
