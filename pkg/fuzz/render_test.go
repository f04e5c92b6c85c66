package fuzz_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/testdata/cases"
)

// Any settings file gives a valid YAML manifest or problems for the user:
// never a chart that fails to render, never a panic.
func FuzzRender(f *testing.F) {
	cases.SeedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := settings.Load(settings.Options{Files: []string{"-"}, Stdin: bytes.NewReader(data)})
		if err != nil {
			return // FuzzLoad covers the loader
		}
		result, err := render.Render(in, nil, nil)
		if err != nil {
			var problems diag.List
			if !errors.As(err, &problems) {
				t.Fatalf("not a problem for the user: %v", err)
			}
			return
		}
		cases.Objects(t, result.Manifest)
	})
}

// Any string a user can type in a free-text setting comes out unchanged where
// it belongs, in valid YAML; in a name, it is refused with problems or comes out
// unchanged.
func FuzzStrings(f *testing.F) {
	for _, s := range []string{"plain", "", " ", "a: b", "- x", "#x", "{{ .Values }}", "'\"", "line\nline", "tab\there", "trailing \n", "\u00e9\u65e5\u2713", "yes", "0777", "1e3", "null", "~", "*ref", "&anchor", "!tag", "%x", "@x", "`x`", "a\\b", "--- x", "... x", "\r\n", "\x7f", "my-job", "team.a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // settings files are UTF-8: the loader refuses anything else
		}
		for _, kind := range []string{"PyTorchJob", "PyTorchTrainingJob", "DeepSpeedJob"} {
			checkFreeText(t, kind, s)
		}
		checkNames(t, s)
	})
}

func checkFreeText(t *testing.T, kind, s string) {
	values := map[string]any{
		"jobKind": kind, "jobName": "fuzz", "containerImage": "busybox", "numPods": 2,
		"environmentVariables": []any{map[string]any{"name": "FUZZ", "value": s}},
		"multiNicNetworkName":  s,
		"sshGitCloneConfig":    map[string]any{"secretName": "key", "configMapName": "hosts", "sshCmd": s},
		"initContainers":       []any{map[string]any{"name": "init", "image": "busybox", "command": []any{s}}},
		"mainProgram":          "train.py",
	}
	if kind == "PyTorchJob" {
		values["setupCommands"] = []any{s}
		values["mainProgram"] = "train.py " + s
	}
	result, err := render.Render(&settings.Input{Values: values}, nil, nil)
	refusable := refusable(kind, s)
	if err != nil {
		var problems diag.List
		if !errors.As(err, &problems) {
			t.Fatalf("%s: not a problem for the user: %v", kind, err)
		}
		if !refusable {
			t.Fatalf("%s: text a user may write is refused: %q\n%v", kind, s, err)
		}
		return
	}
	if refusable {
		t.Fatalf("%s: text the manifest cannot carry is rendered: %q", kind, s)
	}
	job := jobOf(t, result.Manifest)
	pod := podOf(job, kind)
	container := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	env := map[string]string{}
	for _, e := range container["env"].([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			env[e["name"].(string)] = v
		}
	}
	expect(t, kind+" env value", s, env["FUZZ"])
	if s != "" {
		expect(t, kind+" sshCmd", s, env["GIT_SSH_COMMAND"])
		expect(t, kind+" multiNicNetworkName", s, pod["metadata"].(map[string]any)["annotations"].(map[string]any)["k8s.v1.cni.cncf.io/networks"])
	}
	initContainer := pod["spec"].(map[string]any)["initContainers"].([]any)[0].(map[string]any)
	expect(t, kind+" init container command", s, initContainer["command"].([]any)[0])
	if kind == "PyTorchJob" {
		script := container["command"].([]any)[2].(string)
		// A setup command's own final newline is dropped (a - | block ends in one).
		if !strings.Contains(script, "\n"+strings.TrimSuffix(s, "\n")+"\n") || !strings.HasSuffix(script, " train.py "+s+"\n") {
			t.Fatalf("the script does not hold %q as given:\n%s", s, script)
		}
	}
}

// refusable tells whether the settings of checkFreeText must refuse the text
// s: it holds a character a manifest cannot carry (what a YAML file may not
// hold), or it makes a PyTorchJob's mainProgram longer than the schema's 8192
// characters.
func refusable(kind, s string) bool {
	for _, r := range s {
		if !settings.Printable(r) {
			return true
		}
	}
	return kind == "PyTorchJob" && utf8.RuneCountInString("train.py "+s) > 8192
}

// checkNames puts s into the settings that are names: the schema refuses it,
// or it comes out unchanged.
func checkNames(t *testing.T, s string) {
	for _, key := range []string{"jobName", "namespace", "queueName", "serviceAccountName", "topologyFileConfigMap"} {
		values := map[string]any{"jobName": "fuzz", "containerImage": "busybox", key: s}
		result, err := render.Render(&settings.Input{Values: values}, nil, nil)
		if err != nil {
			var problems diag.List
			if !errors.As(err, &problems) {
				t.Fatalf("%s: not a problem for the user: %v", key, err)
			}
			continue
		}
		if !strings.Contains(string(result.Manifest), s) {
			t.Fatalf("%s %q is not in the output", key, s)
		}
		cases.Objects(t, result.Manifest)
	}
}

func jobOf(t *testing.T, manifest []byte) map[string]any {
	docs := cases.Objects(t, manifest)
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	return docs[0]["spec"].(map[string]any)["components"].([]any)[0].(map[string]any)["template"].(map[string]any)
}

func podOf(job map[string]any, kind string) map[string]any {
	spec := job["spec"].(map[string]any)
	switch kind {
	case "PyTorchJob":
		return spec["pytorchReplicaSpecs"].(map[string]any)["Master"].(map[string]any)["template"].(map[string]any)
	case "PyTorchTrainingJob":
		return spec["replicaSpecs"].([]any)[0].(map[string]any)["template"].(map[string]any)
	default:
		return spec["worker"].(map[string]any)["template"].(map[string]any)
	}
}

func expect(t *testing.T, what string, want string, got any) {
	if got != want {
		t.Fatalf("%s: want %q, got %q", what, want, got)
	}
}
