package render

import "helm.sh/helm/v3/pkg/chartutil"

// ChartProblems renders values (settings over the chart's defaults, not
// validated) as Render does, and gives the problems the chart's checks find
// (none when it renders them), each written as torchwrap.refuse writes it for
// Helm's users: "path: message", or the message alone.
func ChartProblems(values chartutil.Values) ([]string, error) {
	c, err := generatorChart()
	if err != nil {
		return nil, err
	}
	docs, err := renderEach(c, []map[string]any{item(values, nil)})
	if err != nil {
		return nil, err
	}
	problems, _, err := readProblems(docs[0])
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.Message
		if p.Path != "" {
			lines[i] = p.Path + ": " + p.Message
		}
	}
	return lines, err
}
