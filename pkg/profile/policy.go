package profile

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/torchwrap/generator/pkg/accelerator"
)

// The API server's side of a profile: its rules and imposed values, where
// the objects generator writes carry the setting, as the validations of a
// ValidatingAdmissionPolicy (CEL, run by the API server itself). The same
// settings give the same verdict on both sides: a job rendered under the
// profile is admitted, and a job written by hand that breaks a rule is
// refused with the rule's message. Where the objects cannot tell what the
// settings say, the rule is the command line's only (Unchecked).

// field is where the objects carry a setting: at which level of an object
// (scope), and a CEL expression of its value there, an optional (ROOT is the
// object admitted); name is the policy's variable of its values.
type field struct {
	name  string
	scope scope
	value string
	// presence: the setting is unset exactly where the value is absent,
	// so that a rule that requires it can be checked on the objects.
	presence bool
	// podSpec: the value is a field of a pod's spec, read where a
	// replica's spec is a whole pod's (not a TrainJob's trainer).
	podSpec bool
}

// fields are the settings whose rules the API server checks.
var fields = map[string]field{
	"jobName":                {name: "jobName", scope: top, value: "optional.of(ROOT.metadata.name)"},
	"queueName":              {name: "queueName", scope: top, value: "ROOT.?metadata.?labels[?'kueue.x-k8s.io/queue-name']", presence: true},
	"workloadPriorityClass":  {name: "workloadPriorityClass", scope: top, value: "ROOT.?metadata.?labels[?'kueue.x-k8s.io/priority-class']", presence: true},
	"numPods":                {name: "numPods", scope: job, value: "optional.of(jg.map(g, g.map(r, int(r.pods)).sum()).sum())"},
	"priority":               {name: "priority", scope: pod, value: "r.spec.?priorityClassName", presence: true, podSpec: true},
	"serviceAccountName":     {name: "serviceAccountName", scope: pod, value: "r.spec.?serviceAccountName", presence: true, podSpec: true},
	"numGpusPerPod":          {name: "numGpusPerPod", scope: pod, value: "r.spec.?containers.orValue([]).exists(c, " + gpusAsked + ") ? optional.of(r.spec.?containers.orValue([]).map(c, " + gpusOf + ").sum()) : optional.none()"},
	"containerImage":         {name: "containerImage", scope: container, value: "c.?image"},
	"initContainers[].image": {name: "initContainerImage", scope: initContainer, value: "c.?image"},
}

// A container's GPUs: the accelerators of its limits, else of its requests,
// of any vendor accelerator.Vendors knows.
var (
	gpusAsked = "c.?resources.?limits.orValue({}).exists(k, " + isAccelerator + ") || c.?resources.?requests.orValue({}).exists(k, " + isAccelerator + ")"
	gpusOf    = "[c.?resources.?limits.orValue({}).exists(k, " + isAccelerator + ") ? c.?resources.?limits.orValue({}) : c.?resources.?requests.orValue({})]" +
		".map(m, m.filter(k, " + isAccelerator + ").map(k, quantity(string(m[k])).asInteger()).sum())[0]"
	isAccelerator = acceleratorTest()
)

// acceleratorTest is the CEL test of a resource name k: an accelerator.
func acceleratorTest() string {
	var names, prefixes []string
	for _, v := range accelerator.Vendors {
		for _, n := range v.Resources {
			names = append(names, strconv.Quote(n))
		}
		for _, p := range v.Prefixes {
			prefixes = append(prefixes, strconv.Quote(p))
		}
	}
	return fmt.Sprintf("(k in [%s] || [%s].exists(p, k.startsWith(p)))", strings.Join(names, ", "), strings.Join(prefixes, ", "))
}

// scope is a level of the objects, each inside the one before: the object
// admitted (an AppWrapper, or a job alone), each job (an AppWrapper's
// components, or the object), each pod template of a job, each container of
// a pod.
type scope int

const (
	top scope = iota
	job
	pod
	container
	initContainer
)

// The policy's variables of every validation: the jobs of the object (an
// AppWrapper's components' templates, or the object itself), and each one's
// pod templates, as groups of replicas (pods); the same of the object
// before an update (oldJobs, oldPods: none on a create).
var baseVariables = []Variable{
	{"jobs", jobsOf("object")},
	{"oldJobs", "request.operation == 'UPDATE' ? " + jobsOf("oldObject") + " : []"},
	{"pods", "variables.jobs.map(j, " + groups + ")"},
	{"oldPods", "variables.oldJobs.map(j, " + groups + ")"},
}

// jobsOf is the CEL of the jobs of an object.
func jobsOf(root string) string {
	return fmt.Sprintf("(%[1]s.kind == 'AppWrapper' ? %[1]s.?spec.?components.orValue([]).map(w, w.?template.orValue({})) : [dyn(%[1]s)])", root)
}

// groups are the pod templates of job j, by kind, as lists of replicas,
// each a map of its pod count (pods), its pod spec (spec) and whether that
// is a whole pod's (pod): a TrainJob's trainer is one container of its
// pods, and its runtime patches the rest of them.
var groups = "(" + strings.Join([]string{
	"j.kind == 'PyTorchJob' ? [j.?spec.?pytorchReplicaSpecs.orValue({}).map(k, " + replica("j.spec.pytorchReplicaSpecs[k].?replicas.orValue(1)", "j.spec.pytorchReplicaSpecs[k].?template.?spec") + ")]",
	"j.kind == 'JobSet' ? [j.?spec.?replicatedJobs.orValue([]).map(x, " + replica("x.?replicas.orValue(1) * x.?template.?spec.?parallelism.orValue(1)", "x.?template.?spec.?template.?spec") + ")]",
	"j.kind == 'PyTorchTrainingJob' ? [j.?spec.?replicaSpecs.orValue([]).map(x, " + replica("x.?replicas.orValue(1)", "x.?template.?spec") + ")]",
	"j.kind == 'DeepSpeedJob' ? [j.?spec.?worker.hasValue() ? [" + replica("j.spec.worker.?replicas.orValue(1)", "j.spec.worker.?template.?spec") + "] : []]",
	"j.kind == 'TrainJob' ? [[{'pods': dyn(j.?spec.?trainer.?numNodes.orValue(1)), 'pod': dyn(false), 'spec': dyn({'containers': [{?'image': j.?spec.?trainer.?image, ?'resources': j.?spec.?trainer.?resourcesPerNode}]})}]] + " +
		"j.?spec.?runtimePatches.orValue([]).map(p, p.?trainingRuntimeSpec.?template.?spec.?replicatedJobs.orValue([]).map(x, {'pods': dyn(0), 'pod': dyn(true), 'spec': dyn(x.?template.?spec.?template.?spec.orValue({}))}))",
	"[]",
}, " : ") + ")"

// replica is the CEL map of one replica: its pod count and pod spec.
func replica(pods, spec string) string {
	return fmt.Sprintf("{'pods': dyn(%s), 'pod': dyn(true), 'spec': dyn(%s.orValue({}))}", pods, spec)
}

// Variable is a variable of the policy, which its validations share.
type Variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Validation is one validation of the policy: its CEL expression, and the
// message of the rule it checks.
type Validation struct {
	Expression string `json:"expression"`
	Message    string `json:"message"`
}

// Unchecked is a rule (or imposed value) that the API server cannot check:
// where it is written, its key, what it is, and why.
type Unchecked struct {
	At, Key, What, Why string
}

// Policy is the validations of a policy that checks the profile's rules and
// imposed values on objects, with the variables they share; Unchecked the
// ones it cannot check, which the command line alone enforces.
func (p *Profile) Policy() ([]Variable, []Validation, []Unchecked) {
	var out []Validation
	var unchecked []Unchecked
	used := map[string]field{}
	add := func(f field, schema map[string]any, there presence, message, key, what string) {
		used[f.name] = f
		out = append(out, validation(f, schema, there, message, key, what))
	}
	for _, im := range p.imposed {
		key := im.path.String()
		f, ok := fields[key]
		if !ok {
			unchecked = append(unchecked, Unchecked{im.at, key, "imposed value", noField(key)})
			continue
		}
		switch {
		case im.value == nil:
			add(f, nil, mustNotBe, im.message, key, "imposed null, unset")
		case f.presence:
			add(f, map[string]any{"const": im.value}, mustBe, im.message, key, "imposed "+show(im.value))
		default:
			add(f, map[string]any{"const": im.value}, mayBe, im.message, key, "imposed "+show(im.value))
		}
	}
	for _, r := range p.rules {
		f, ok := fields[r.key.Path]
		if !ok {
			unchecked = append(unchecked, Unchecked{r.at, r.key.Path, "rule", noField(r.key.Path)})
			continue
		}
		if r.required && !f.presence {
			unchecked = append(unchecked, Unchecked{r.at, r.key.Path, "rule", fmt.Sprintf("the objects carry %s even when the settings leave it unset, so that they cannot tell whether a user set it", r.key.Path)})
			continue
		}
		if r.schema != nil {
			if why := untranslatable(r.schema); why != "" {
				unchecked = append(unchecked, Unchecked{r.at, r.key.Path, "rule", why})
				continue
			}
		}
		what := describe(r.schema)
		if r.required {
			what = strings.TrimPrefix(what+", set", ", ")
		}
		there := mayBe
		if r.required {
			there = mustBe
		}
		add(f, r.schema, there, r.message, r.key.Path, what)
	}
	if len(out) == 0 {
		return nil, nil, unchecked
	}
	variables := slices.Clone(baseVariables)
	for _, name := range slices.Sorted(maps.Keys(used)) {
		f := used[name]
		variables = append(variables, Variable{f.name, f.values(false)}, Variable{f.old(), f.values(true)})
	}
	return variables, out, unchecked
}

// noField says why a rule on key is the command line's only.
func noField(key string) string {
	return fmt.Sprintf("no field of the objects says what %s is; the API server checks rules on %s", key, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
}

// untranslatable says why a rule's schema cannot be checked in CEL, or "".
func untranslatable(s map[string]any) string {
	for _, kw := range keywords {
		if _, ok := s[kw.name]; ok && kw.cel == nil {
			return kw.name + " is checked by the command line alone"
		}
	}
	if m, ok := s["multipleOf"]; ok && jsonType(m) != "integer" {
		return "multipleOf is checked on objects for whole numbers only"
	}
	if not, ok := s["not"].(map[string]any); ok {
		return untranslatable(not)
	}
	return ""
}

// presence is what a rule asks of a value's being there: nothing (a value,
// when there is one, keeps the rule), that it is there, or that it is not.
type presence int

const (
	mayBe presence = iota
	mustBe
	mustNotBe
)

// validation is the validation of one rule on a field: the value, wherever
// the objects carry it, must keep schema (nil: anything) and be there, or
// not, as there says. It reads the field's variable: at each place, a list
// of its value or of none. On an update, a rule is checked only when the
// field's values changed, so that a job created under an earlier profile
// can still be run, held and resumed by its controllers.
func validation(f field, schema map[string]any, there presence, message, key, what string) Validation {
	check := "true"
	if schema != nil {
		check = predicate(schema, "v")
	}
	list := "variables." + f.name
	depth := map[scope]int{top: 0, job: 1, pod: 3, container: 4, initContainer: 4}[f.scope]
	inner := list
	if depth > 0 {
		inner = fmt.Sprintf("x%d", depth)
	}
	check = fmt.Sprintf("%s.all(v, %s)", inner, check)
	switch there {
	case mustBe:
		check = fmt.Sprintf("size(%s) == 1 && %s", inner, check)
	case mustNotBe:
		check = fmt.Sprintf("size(%s) == 0", inner)
	}
	for i := depth; i >= 1; i-- {
		outer := list
		if i > 1 {
			outer = fmt.Sprintf("x%d", i-1)
		}
		check = fmt.Sprintf("%s.all(x%d, %s)", outer, i, check)
	}
	expr := fmt.Sprintf("(request.operation == 'UPDATE' && variables.%s == variables.%s) || %s", f.old(), f.name, check)
	return Validation{Expression: expr, Message: fmt.Sprintf("%s (the profile's rule on %s: %s)", oneLine(message), key, what)}
}

// old names the variable of the field's values before an update.
func (f field) old() string { return "old" + strings.ToUpper(f.name[:1]) + f.name[1:] }

// values is the CEL of the field's values, wherever the object (or the old
// object) carries them: at each place, a list of its value or of none,
// nested as the places are (validation reads them at that depth).
func (f field) values(old bool) string {
	root, pods := "object", "variables.pods"
	if old {
		root, pods = "oldObject", "variables.oldPods"
	}
	v := "(" + strings.ReplaceAll(f.value, "ROOT", root) + ")"
	leaf := fmt.Sprintf("(%s.hasValue() ? [dyn(%s.value())] : [])", v, v)
	switch f.scope {
	case top:
		if old {
			return "request.operation == 'UPDATE' ? " + leaf + " : []"
		}
		return leaf
	case job:
		return fmt.Sprintf("%s.map(jg, %s)", pods, leaf)
	case pod:
		replicas := "g"
		if f.podSpec {
			replicas = "g.filter(r, r.pod)"
		}
		return fmt.Sprintf("%s.map(jg, jg.map(g, %s.map(r, %s)))", pods, replicas, leaf)
	}
	list := map[scope]string{container: "containers", initContainer: "initContainers"}[f.scope]
	return fmt.Sprintf("%s.map(jg, jg.map(g, g.map(r, r.spec.?%s.orValue([]).map(c, %s))))", pods, list, leaf)
}

// literal writes a value of a rule as a CEL literal: whole numbers as ints.
func literal(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		if v == float64(int64(v)) {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// oneLine folds a message onto one line, as a validation's message must be.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
