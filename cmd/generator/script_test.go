package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// update is the -update flag of make golden: cmp then rewrites the expected
// files of the scripts with what the generator wrote.
var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar instead of comparing with it")

// TestMain lets the scripts run the generator as a program of its own: the
// test binary, copied under the name generator into a folder on the scripts'
// PATH, runs main when it is called by that name.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"generator": main})
}

// TestScripts runs each testdata/script/*.txtar: the command line's behaviour,
// standard output, standard error, exit code and files, as a user sees it.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": status,
			"mtime":  mtime,
		},
	})
}

// status CODE PROGRAM [ARGS...] runs PROGRAM as exec does and checks that it
// exits with CODE: unlike ! exec, it tells invalid settings (1) from a wrong
// command line (2).
func status(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! status")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: status CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status: %q is not an exit code", args[0])
	}
	got := 0
	var exit *exec.ExitError
	if err := ts.Exec(args[1], args[2:]...); errors.As(err, &exit) {
		got = exit.ExitCode()
	} else if err != nil {
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// mtime FILE TIME sets the modification time of FILE to TIME (RFC 3339);
// mtime FILE writes it, in UTC, to standard output.
func mtime(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mtime")
	}
	switch len(args) {
	case 1:
		info, err := os.Stat(ts.MkAbs(args[0]))
		ts.Check(err)
		fmt.Fprintln(ts.Stdout(), info.ModTime().UTC().Format(time.RFC3339Nano))
	case 2:
		when, err := time.Parse(time.RFC3339, args[1])
		ts.Check(err)
		ts.Check(os.Chtimes(ts.MkAbs(args[0]), when, when))
	default:
		ts.Fatalf("usage: mtime FILE [TIME]")
	}
}
