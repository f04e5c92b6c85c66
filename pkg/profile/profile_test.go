package profile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/diag"
	"github.com/torchwrap/generator/pkg/profile"
	"github.com/torchwrap/generator/pkg/render"
	"github.com/torchwrap/generator/pkg/settings"
)

// header is what every profile of these tests begins with.
const header = "apiVersion: torchwrap.dev/v1alpha1\nkind: Profile\n"

// read reads profiles given as text, named a.yaml, b.yaml, ... in order.
func read(t *testing.T, texts ...string) (*profile.Profile, error) {
	t.Helper()
	var sources []profile.Source
	for i, text := range texts {
		sources = append(sources, profile.Source{Name: string(rune('a'+i)) + ".yaml", Data: []byte(header + text)})
	}
	return profile.Read(sources...)
}

// mustRead reads profiles that have no problem.
func mustRead(t *testing.T, texts ...string) *profile.Profile {
	t.Helper()
	p, err := read(t, texts...)
	require.NoError(t, err)
	require.Empty(t, p.Problems())
	return p
}

// renderUnder renders a settings file (settings.yaml) with --set arguments
// under a profile: the values the chart saw, or the diagnostics, placed.
func renderUnder(t *testing.T, p *profile.Profile, text string, sets ...string) (map[string]any, diag.List) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "settings.yaml")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	t.Chdir(filepath.Dir(file))
	in, err := settings.Load(settings.Options{Files: []string{"settings.yaml"}, Sets: sets})
	require.NoError(t, err)
	if p != nil {
		in, err = p.Apply(in)
		require.NoError(t, err)
	}
	result, err := render.Render(in, p, nil)
	if err != nil {
		var problems diag.List
		require.ErrorAs(t, err, &problems)
		return nil, problems
	}
	return result.Values, nil
}

// lines writes diagnostics a line each, as the command line prints them.
func lines(ds diag.List) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

const job = "jobName: j\ncontainerImage: ghcr.io/a/b:1\nnumPods: 2\n"

// Every source in its place: the chart's default, under the cluster's
// default, under the namespace's, under the user's file, under --set; an
// imposed value over every default, and a problem where the user
// contradicts it.
func TestLayering(t *testing.T) {
	cluster := "defaults:\n  numGpusPerPod: 1\n  numCpusPerPod: 2\n  totalMemoryPerPod: 2Gi\n  queueName: cluster-q\n"
	namespace := "defaults:\n  numCpusPerPod: 3\n  totalMemoryPerPod: 3Gi\nimposed:\n  - key: queueName\n    value: team-q\n    message: the team's queue\n"
	p := mustRead(t, cluster, namespace)

	values, problems := renderUnder(t, p, job+"totalMemoryPerPod: 4Gi\n", "numPods=3")
	require.Empty(t, problems)
	require.Equal(t, "IfNotPresent", values["imagePullPolicy"], "the chart's default, which no layer sets")
	require.EqualValues(t, 1, values["numGpusPerPod"], "the cluster's default")
	require.EqualValues(t, 3, values["numCpusPerPod"], "the namespace's default over the cluster's")
	require.Equal(t, "4Gi", values["totalMemoryPerPod"], "the user's file over both")
	require.EqualValues(t, 3, values["numPods"], "--set over the file")
	require.Equal(t, "team-q", values["queueName"], "the imposed value over the cluster's default")

	// The other order: the namespace's profile first, refined by the
	// cluster's, gives the cluster's defaults where both set one; and a
	// later default cannot change what an earlier profile imposes.
	values, _ = renderUnder(t, mustRead(t, namespace, strings.Replace(cluster, "  queueName: cluster-q\n", "", 1)), job)
	require.EqualValues(t, 2, values["numCpusPerPod"])
	require.Equal(t, "team-q", values["queueName"])
	_, err := read(t, namespace, cluster)
	require.EqualError(t, err, "b.yaml:7:3: defaults.queueName: queueName is imposed by a.yaml:7, and an imposed value is the default too; remove it here")

	_, problems = renderUnder(t, p, job+"queueName: mine\n")
	require.Equal(t, []string{`settings.yaml:4:12: queueName: "mine" goes against the profile, which imposes "team-q" (b.yaml:7): the team's queue; leave queueName out of your settings, the profile sets it`}, lines(problems))
	_, problems = renderUnder(t, p, job, "queueName=mine")
	require.Equal(t, []string{`--set queueName=mine: queueName: "mine" goes against the profile, which imposes "team-q" (b.yaml:7): the team's queue; leave queueName out of your settings, the profile sets it`}, lines(problems))
	_, problems = renderUnder(t, p, job+"queueName:\n")
	require.Equal(t, []string{`settings.yaml:4:11: queueName: an empty value removes "team-q", which the profile imposes (b.yaml:7): the team's queue; leave queueName out of your settings, the profile sets it`}, lines(problems))
	_, problems = renderUnder(t, p, job+"queueName: team-q\n")
	require.Empty(t, problems, "the imposed value itself, written out")

	// A problem with a default is placed in the profile, with how to do
	// without it.
	_, problems = renderUnder(t, mustRead(t, "defaults:\n  numRoceGdr: 2\n"), job, "numPods=1")
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].String(), "a.yaml:4:15: numRoceGdr: ")
	require.True(t, strings.HasSuffix(problems[0].String(), "; it is a default of a.yaml: set numRoceGdr to null in your settings to do without it"), problems[0].String())
	values, problems = renderUnder(t, mustRead(t, "defaults:\n  numRoceGdr: 2\n"), job+"numRoceGdr:\n", "numPods=1")
	require.Empty(t, problems)
	require.NotContains(t, values, "numRoceGdr")
}

// An imposed mapping holds its entries: the user may add others.
func TestImposedMapping(t *testing.T) {
	p := mustRead(t, "imposed:\n  - key: nodeSelector\n    value: {pool: a100}\n    message: the A100 pool\n")
	values, problems := renderUnder(t, p, job+"nodeSelector:\n  zone: east\n")
	require.Empty(t, problems)
	require.Equal(t, map[string]any{"pool": "a100", "zone": "east"}, values["nodeSelector"])
	_, problems = renderUnder(t, p, job+"nodeSelector:\n  pool: v100\n")
	require.Equal(t, []string{`settings.yaml:5:9: nodeSelector.pool: "v100" goes against the profile, which imposes "a100" (a.yaml:4): the A100 pool; leave nodeSelector.pool out of your settings, the profile sets it`}, lines(problems))
}

// Each kind of rule, with a value it admits and one it refuses (lines of a
// settings file), under a profile whose defaults keep it.
func TestRuleKinds(t *testing.T) {
	for _, c := range []struct {
		name, key, schema string
		defaults          string // the profile's, under defaults:
		admits, refuses   string
		describe          string // the rule in words
	}{
		{"const", "queueName", "{const: q1}", "queueName: q1", "queueName: q1", "queueName: q2", `exactly "q1"`},
		{"enum", "priority", "{enum: [low-priority, default-priority]}", "", "priority: low-priority", "priority: high-priority", `one of "low-priority", "default-priority"`},
		{"minimum", "numPods", "{minimum: 2}", "numPods: 2", "numPods: 2", "numPods: 1", "at least 2"},
		{"exclusiveMinimum", "numPods", "{exclusiveMinimum: 2}", "numPods: 3", "numPods: 3", "numPods: 2", "more than 2"},
		{"maximum", "numGpusPerPod", "{maximum: 8}", "", "numGpusPerPod: 8", "numGpusPerPod: 9", "at most 8"},
		{"exclusiveMaximum", "numGpusPerPod", "{exclusiveMaximum: 8}", "numGpusPerPod: 1", "numGpusPerPod: 7", "numGpusPerPod: 8", "less than 8"},
		{"multipleOf", "numGpusPerPod", "{multipleOf: 2}", "", "numGpusPerPod: 4", "numGpusPerPod: 3", "a multiple of 2"},
		{"pattern", "containerImage", `{pattern: '^ghcr\.io/'}`, "", "containerImage: ghcr.io/x:1", "containerImage: docker.io/x:1", `matching ^ghcr\.io/`},
		{"minLength", "jobName", "{minLength: 3}", "", "jobName: abc", "jobName: ab", "at least 3 characters"},
		{"maxLength", "jobName", "{maxLength: 3}", "", "jobName: abc", "jobName: abcd", "at most 3 characters"},
		{"minItems", "setupCommands", "{minItems: 1}", "", "setupCommands: [ls]", "setupCommands: []", "at least 1 items"},
		{"maxItems", "setupCommands", "{maxItems: 1}", "", "setupCommands: [ls]", "setupCommands: [ls, pwd]", "at most 1 items"},
		{"uniqueItems", "setupCommands", "{uniqueItems: true}", "", "setupCommands: [ls, pwd]", "setupCommands: [ls, ls]", "no item twice"},
		{"not", "priority", "{not: {enum: [high-priority]}}", "", "priority: low-priority", "priority: high-priority", `not one of "high-priority"`},
		{"inside a list", "volumes[].claimName", `{pattern: '^team-a-'}`, "", "volumes: [{name: v, claimName: team-a-data, mountPath: /d}]", "volumes: [{name: v, claimName: other, mountPath: /d}]", "matching ^team-a-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "rules:\n  - key: " + c.key + "\n    message: the rule's own words\n    schema: " + c.schema + "\n"
			if c.defaults != "" {
				text = "defaults:\n  " + c.defaults + "\n" + text
			}
			p := mustRead(t, text)
			// the job's own lines, but the one of the key tested
			var base string
			for _, line := range strings.SplitAfter(job, "\n") {
				if !strings.HasPrefix(line, c.key+":") {
					base += line
				}
			}
			_, problems := renderUnder(t, p, base+c.admits+"\n")
			require.Empty(t, problems)
			_, problems = renderUnder(t, p, base+c.refuses+"\n")
			require.Len(t, problems, 1)
			require.Contains(t, problems[0].Message, "breaks a rule of the profile ("+c.describe+"; a.yaml:")
			require.True(t, strings.HasSuffix(problems[0].Message, "): the rule's own words"), problems[0].Message)
		})
	}
}

// A rule that requires a key: a job must set it (or the profile's defaults).
func TestRuleRequired(t *testing.T) {
	p := mustRead(t, "rules:\n  - key: mainProgram\n    required: true\n    message: every job runs a program\n")
	_, problems := renderUnder(t, p, job+"mainProgram: train.py\n")
	require.Empty(t, problems)
	_, problems = renderUnder(t, p, job)
	require.Equal(t, []string{"settings.yaml:1:1: mainProgram: required by the profile (a.yaml:4): every job runs a program"}, lines(problems))
	_, problems = renderUnder(t, mustRead(t, "defaults:\n  mainProgram: train.py\nrules:\n  - key: mainProgram\n    required: true\n    message: m\n"), job)
	require.Empty(t, problems)
}

// The schema's own problems with a value come first, and the profile's rule
// says nothing more of the same key.
func TestRuleAfterTheSchema(t *testing.T) {
	p := mustRead(t, "rules:\n  - key: numGpusPerPod\n    schema: {maximum: 8}\n    message: eight\n")
	_, problems := renderUnder(t, p, job+"numGpusPerPod: many\n")
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].Message, "expected a whole number")
}

// What a profile says of a key, and the file that applies as its parts do.
func TestAboutAndFile(t *testing.T) {
	p := mustRead(t, "description: lab\ndefaults:\n  numGpusPerPod: 4\nrules:\n  - key: numGpusPerPod\n    schema: {maximum: 8}\n    message: eight\n",
		"description: team\ndefaults:\n  numGpusPerPod: 2\nimposed:\n  - key: queueName\n    value: q\n    message: the queue\n")
	require.Equal(t, "a.yaml (lab), refined by b.yaml (team)", p.Name())
	require.Equal(t, []string{"default 2 (b.yaml:5)", "rule: at most 8 (a.yaml:7): eight"}, p.About("numGpusPerPod"))
	require.Equal(t, []string{`imposed "q", which no one may change (b.yaml:7): the queue`}, p.About("queueName"))
	require.Empty(t, p.About("numPods"))
	require.Equal(t, "1 default, 1 imposed value, 1 rule; the API server checks 2 of the 2 rules and imposed values", p.Summary())

	data, err := p.File("saved")
	require.NoError(t, err)
	require.Equal(t, `# saved
apiVersion: torchwrap.dev/v1alpha1
kind: Profile
description: lab; team
defaults:
  numGpusPerPod: 2
imposed:
- key: queueName
  message: the queue
  value: q
rules:
- key: numGpusPerPod
  message: eight
  schema:
    maximum: 8
`, string(data))
	one, err := profile.Read(profile.Source{Name: "saved.yaml", Data: data})
	require.NoError(t, err)
	for _, values := range []string{job, job + "numGpusPerPod: 9\n", job + "queueName: other\n"} {
		a, problemsA := renderUnder(t, p, values)
		b, problemsB := renderUnder(t, one, values)
		require.Equal(t, a, b)
		require.Equal(t, len(problemsA), len(problemsB))
	}
}

// A cluster keeps a profile in a ConfigMap, under profile.yaml; one without
// that key is refused with what it has.
func TestFromConfigMap(t *testing.T) {
	src, err := profile.FromConfigMap("team-a", map[string]string{"profile.yaml": header})
	require.NoError(t, err)
	require.Equal(t, "ConfigMap team-a/torchwrap-profile", src.Name)
	_, err = profile.FromConfigMap("team-a", map[string]string{"profile.yml": header, "notes": ""})
	require.EqualError(t, err, "ConfigMap team-a/torchwrap-profile: has no key profile.yaml, where a profile's text is kept (its keys: notes, profile.yml); generator profile render writes the ConfigMap of a profile file")
	require.Equal(t, []string{"kube-public", "team-a"}, profile.Places("team-a"))
	require.Equal(t, []string{"kube-public"}, profile.Places("kube-public"))
}
