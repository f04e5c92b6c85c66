package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/torchwrap/generator/pkg/cli"
	"github.com/torchwrap/generator/schema"
	"github.com/torchwrap/generator/testdata/cases"
)

// explain's output, as users read it: the list of keys, and a key of each
// shape (a scalar with rules, an object with fields, a field of list items,
// a default that follows jobKind).
func TestExplainOutput(t *testing.T) {
	for name, args := range map[string][]string{
		"list":                 {"explain"},
		"numRoceGdr":           {"explain", "numRoceGdr"},
		"sshGitCloneConfig":    {"explain", "sshGitCloneConfig"},
		"environmentVariables": {"explain", "environmentVariables"},
		"env-secret-name":      {"explain", "environmentVariables[0].secret.name"},
		"restartPolicy":        {"explain", "restartPolicy"},
		"runMode.debug":        {"explain", "runMode.debug"},
		"priority":             {"explain", "priority"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := generator(t, nil, args...)
			require.Equal(t, cli.ExitOK, code, errOut)
			require.Empty(t, errOut)
			cases.Check(t, cases.Path(t, "testdata", "explain", name+".txt"), []byte(out))
		})
	}
}

// Every key of the schema, at every depth, is explained, under each way of
// writing its path, and every top-level key is in the list.
func TestExplainCoversEveryKey(t *testing.T) {
	s, err := schema.Model()
	require.NoError(t, err)
	list, _, code := generator(t, nil, "explain")
	require.Equal(t, cli.ExitOK, code)
	for _, k := range s.Keys() {
		spellings := []string{k.Path, strings.ReplaceAll(k.Path, "[]", ""), strings.ReplaceAll(k.Path, "[]", "[3]")}
		for _, path := range spellings {
			out, errOut, code := generator(t, nil, "explain", path)
			require.Equal(t, cli.ExitOK, code, errOut)
			require.True(t, strings.HasPrefix(out, "KEY:      "+k.Path+"\n"), out)
			require.Contains(t, out, "TYPE:     "+k.Type+"\n")
			require.Contains(t, strings.Join(strings.Fields(out), " "), k.Description, path)
		}
		if !strings.ContainsAny(k.Path, ".[") {
			require.Contains(t, list, "\n  "+k.Path+" <"+k.Type+">", k.Path)
		}
	}
}

func TestExplainUnknownKey(t *testing.T) {
	out, errOut, code := generator(t, nil, "explain", "numGPUsPerPod")
	require.Equal(t, cli.ExitUsage, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `Error: "numGPUsPerPod" is not a key of settings.yaml; did you mean numGpusPerPod?`)

	_, errOut, code = generator(t, nil, "explain", "nothing.like.it")
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, errOut, `"nothing.like.it" is not a key of settings.yaml; 'generator explain' lists them`)
}

// A key is found by its own name too, when no other key has that name;
// otherwise the keys of that name, or the key it most likely means, are
// suggested.
func TestExplainFindsAKeyByItsOwnName(t *testing.T) {
	want, errOut, code := generator(t, nil, "explain", "torchrun.rdzvBackend")
	require.Equal(t, cli.ExitOK, code, errOut)
	out, errOut, code := generator(t, nil, "explain", "rdzvBackend")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Equal(t, want, out)

	for name, message := range map[string]string{
		"rdzvbackend": `"rdzvbackend" is not a key of settings.yaml; did you mean torchrun.rdzvBackend?`,
		"mountPath":   `"mountPath" is the name of several keys: volumes[].mountPath, mountNVMe.mountPath; explain one of them`,
	} {
		out, errOut, code := generator(t, nil, "explain", name)
		require.Equal(t, cli.ExitUsage, code, name)
		require.Empty(t, out)
		require.Contains(t, errOut, "Error: "+message+"\n", name)
	}
}
