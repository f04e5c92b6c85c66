package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/torchwrap/generator/pkg/settings"
	"github.com/torchwrap/generator/schema"
)

// width is the width explain wraps its text to.
const width = 80

func newExplain(s Streams) *cobra.Command {
	var profiles []string
	cmd := &cobra.Command{
		Use:   "explain [KEY]",
		Short: "Describe a setting: its meaning, type, default, allowed values and an example",
		Long: `Explain describes a key of settings.yaml from the settings schema: what it does,
its type, its default, the values it allows, the rules it follows, an example,
and its fields when it holds some. Without KEY, it lists the keys by section.

Fields are written with dots, and the fields of list items with [] (or without):
sshGitCloneConfig.secretName, environmentVariables[].name. A field whose name no
other key has can be named alone: rdzvBackend for torchrun.rdzvBackend.

With --profile (a profile file; generator profile get saves your cluster's),
it also says what the profile sets for the key: its default, its imposed
value, its rules.`,
		Example: `  generator explain
  generator explain numGpusPerPod
  generator explain environmentVariables[].secret
  generator explain numGpusPerPod --profile lab.yaml`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			s, err := schema.Model()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			var paths []cobra.Completion
			for _, k := range s.Keys() {
				paths = append(paths, cobra.CompletionWithDesc(k.Path, firstSentence(k.Description)))
			}
			return paths, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: run(func(_ *cobra.Command, args []string) error {
			sch, err := schema.Model()
			if err != nil {
				return err
			}
			keys := sch.Keys()
			if len(args) == 0 {
				return listKeys(s.Out, keys)
			}
			key, err := find(keys, args[0])
			if err != nil {
				return err
			}
			var about []string
			if len(profiles) > 0 {
				p, err := loadProfile(profiles)
				if err != nil {
					return err
				}
				about = append([]string{p.Name()}, p.About(key.Path)...)
			}
			return explainKey(s.Out, keys, key, about)
		}),
	}
	cmd.Flags().StringArrayVar(&profiles, "profile", nil, "a profile file: say what it sets for the key too; repeat it for one that refines another")
	return cmd
}

// find returns the key a user names: by its path, as schema.Keys.Find finds
// it, or by its own name when no other key has that name (rdzvBackend for
// torchrun.rdzvBackend). Otherwise the error suggests the keys of that name,
// or the key the name most likely means.
func find(keys schema.Keys, name string) (schema.Key, error) {
	key, ok, suggestion := keys.Find(name)
	if ok {
		return key, nil
	}
	var named []schema.Key
	var paths, lower []string // every key's path, and its own name in lower case
	for _, k := range keys {
		own := k.Path[strings.LastIndexAny(k.Path, ".]")+1:]
		if own == name {
			named = append(named, k)
		}
		paths = append(paths, k.Path)
		lower = append(lower, strings.ToLower(own))
	}
	switch {
	case len(named) == 1:
		return named[0], nil
	case len(named) > 1:
		var names []string
		for _, k := range named {
			names = append(names, k.Path)
		}
		return schema.Key{}, settings.UsageError{Err: fmt.Errorf("%q is the name of several keys: %s; explain one of them", name, strings.Join(names, ", "))}
	case suggestion == "":
		suggestion = schema.Closest(name, paths, lower)
	}
	if suggestion != "" {
		return schema.Key{}, settings.UsageError{Err: fmt.Errorf("%q is not a key of settings.yaml; did you mean %s?", name, suggestion)}
	}
	return schema.Key{}, settings.UsageError{Err: fmt.Errorf("%q is not a key of settings.yaml; 'generator explain' lists them", name)}
}

// listKeys writes the top-level keys by section, each with its type and the
// first sentence of its description.
func listKeys(w io.Writer, keys schema.Keys) error {
	var b strings.Builder
	b.WriteString("The keys of settings.yaml, by section. For all about one: generator explain KEY\n")
	section := ""
	for _, k := range keys {
		if strings.ContainsAny(k.Path, ".[") {
			continue
		}
		if k.Section != section {
			section = k.Section
			fmt.Fprintf(&b, "\n%s:\n", strings.ToUpper(section))
		}
		writeField(&b, k.Path, k)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeField writes a key as a line of a list: its name, type, whether it is
// required, and the first sentence of its description below.
func writeField(b *strings.Builder, name string, k schema.Key) {
	required := ""
	if k.Required {
		required = " (required)"
	}
	fmt.Fprintf(b, "  %s <%s>%s\n", name, k.Type, required)
	for _, line := range schema.Wrap(firstSentence(k.Description), width-4) {
		b.WriteString("    " + line + "\n")
	}
}

// explainKey writes all the schema says about a key, and what a profile
// says of it: its name, then a line each (none: nothing).
func explainKey(w io.Writer, keys schema.Keys, k schema.Key, profile []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "KEY:      %s\n", k.Path)
	fmt.Fprintf(&b, "SECTION:  %s\n", k.Section)
	fmt.Fprintf(&b, "TYPE:     %s\n", k.Type)
	switch {
	case k.Required:
		b.WriteString("REQUIRED: yes\n")
	case k.Default != nil:
		fmt.Fprintf(&b, "DEFAULT:  %s\n", k.DefaultText())
	default:
		b.WriteString("DEFAULT:  none (unset)\n")
	}
	paragraph(&b, "DESCRIPTION", k.Description)
	if len(k.Enum) > 0 {
		var values []string
		for _, v := range k.Enum {
			values = append(values, fmt.Sprint(v))
		}
		paragraph(&b, "ALLOWED VALUES", strings.Join(values, ", "))
	}
	if len(k.Rules) > 0 {
		b.WriteString("\nRULES:\n")
		bullets(&b, k.Rules)
	}
	if len(profile) > 0 {
		fmt.Fprintf(&b, "\nPROFILE (%s):\n", profile[0])
		if len(profile) == 1 {
			b.WriteString("  nothing about this key\n")
		}
		bullets(&b, profile[1:])
	}
	if k.Example != nil {
		b.WriteString("\nEXAMPLE:\n")
		for _, line := range strings.SplitAfter(k.InContext(k.Example), "\n") {
			if line != "" {
				b.WriteString("  " + line)
			}
		}
	}
	if len(k.Fields) > 0 {
		b.WriteString("\nFIELDS:\n")
		for _, path := range k.Fields {
			field, _, _ := keys.Find(path)
			writeField(&b, path[strings.LastIndex(path, ".")+1:], field)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// bullets writes a list of sentences, each wrapped, after a dash.
func bullets(b *strings.Builder, items []string) {
	for _, item := range items {
		for i, line := range schema.Wrap(item, width-4) {
			prefix := "  - "
			if i > 0 {
				prefix = "    "
			}
			b.WriteString(prefix + line + "\n")
		}
	}
}

// paragraph writes a titled, indented and wrapped paragraph.
func paragraph(b *strings.Builder, title, text string) {
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, line := range schema.Wrap(text, width-2) {
		b.WriteString("  " + line + "\n")
	}
}

// firstSentence is text up to its first full stop followed by a space.
func firstSentence(text string) string {
	if i := strings.Index(text, ". "); i >= 0 {
		return text[:i+1]
	}
	return text
}
