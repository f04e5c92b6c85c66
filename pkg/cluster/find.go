package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	settingsschema "github.com/torchwrap/generator/schema"
)

// Find finds a submitted job by how a command line names it: NAME, or
// KIND/NAME as kubectl takes it (the kind's name or resource, in any case,
// with its group or not: pytorchjob/llama, pytorchjobs.kubeflow.org/llama).
// A NAME is looked for among every kind at once; named tells the jobs
// found apart. The error is BadName for a KIND/NAME that names no kind,
// NoSuchJob when no job has the name (NotServed for a kind named that the
// cluster does not serve), Ambiguous when jobs of several kinds have it,
// Unreachable when the cluster does not answer.
func (c *Client) Find(ctx context.Context, namespace, arg string) (Ref, error) {
	among, name, err := parseName(arg)
	if err != nil {
		return Ref{}, err
	}
	looked, err := c.lookFor(ctx, namespace, name, among)
	if err != nil {
		return Ref{}, err
	}
	jobs := named(looked)
	switch len(jobs) {
	case 0:
		return Ref{}, c.noSuchJob(ctx, namespace, name, looked)
	case 1:
		// What reads it next need not ask for it again.
		for _, l := range looked {
			if l.err == nil && l.kind.name == jobs[0].Kind {
				c.remember(jobs[0], l.obj)
			}
		}
		return jobs[0], nil
	}
	return Ref{}, Ambiguous{Namespace: namespace, Name: name, Jobs: jobs}
}

// CheckName checks how a command line names a job (NAME, or KIND/NAME)
// without asking the cluster, as Find would: the error is BadName.
func CheckName(arg string) error {
	_, _, err := parseName(arg)
	return err
}

// parseName reads how a command line names a job, NAME or KIND/NAME, into
// the kinds to look for the name among: every kind, or the one named.
func parseName(arg string) ([]*kind, string, error) {
	word, name, qualified := strings.Cut(arg, "/")
	if !qualified {
		return kinds, arg, nil
	}
	if word == "" || name == "" || strings.Contains(name, "/") {
		return nil, "", BadName{fmt.Sprintf("%s: give a job as NAME, or as KIND/NAME (as in pytorchjob/NAME)", arg)}
	}
	k := kindCalled(word)
	if k == nil {
		var forms []string
		for _, each := range kinds {
			forms = append(forms, strings.ToLower(each.name), each.resource.Resource)
		}
		fix := "name the job as NAME, or as KIND/NAME with one of them"
		if closest := settingsschema.Closest(word, forms, forms); closest != "" {
			fix = fmt.Sprintf("did you mean %s/%s?", closest, name)
		}
		return nil, "", BadName{fmt.Sprintf("%s: %s is not a job kind (the kinds are %s); %s", arg, word, sentence(kindNames(), "and"), fix)}
	}
	return []*kind{k}, name, nil
}

// BadName is the error of Find for a KIND/NAME that names no kind the
// generator makes, or no name.
type BadName struct{ message string }

func (e BadName) Error() string { return e.message }

// lookup is what one kind answered for a name: its job (err nil), or why
// it has none.
type lookup struct {
	kind *kind
	obj  *unstructured.Unstructured
	err  error
}

// lookFor asks each kind among for its job of a name in a namespace, all at
// once. The error is Unreachable when the cluster does not answer, or the
// first answer other than the job, not found or forbidden.
func (c *Client) lookFor(ctx context.Context, namespace, name string, among []*kind) ([]lookup, error) {
	looked := make([]lookup, len(among))
	var wg sync.WaitGroup
	for i, k := range among {
		wg.Go(func() {
			obj, err := c.Dynamic.Resource(k.resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
			looked[i] = lookup{kind: k, obj: obj, err: err}
		})
	}
	wg.Wait()
	for _, l := range looked {
		switch {
		case l.err == nil, apierrors.IsNotFound(l.err), apierrors.IsForbidden(l.err):
		case c.Unreached(l.err) != nil:
			return nil, c.Unreached(l.err)
		default:
			return nil, fmt.Errorf("looking for %s %q in namespace %q: %w", Indefinite(l.kind.name), name, namespace, l.err)
		}
	}
	return looked, nil
}

// named are the jobs that lookFor found, each once: a job whose controller
// is another of them (an AppWrapper's component, a TrainJob's JobSet, made
// of its name) is part of that one. Here, and only here, is decided
// whether a name names one job or several: Find refuses a name of several,
// Submit warns of a job submitted beside others of its name.
func named(looked []lookup) []Ref {
	found := map[types.UID]bool{}
	for _, l := range looked {
		if l.err == nil {
			found[l.obj.GetUID()] = true
		}
	}
	var jobs []Ref
	for _, l := range looked {
		if l.err != nil {
			continue
		}
		if owner := metav1.GetControllerOf(l.obj); owner != nil && found[owner.UID] {
			continue
		}
		jobs = append(jobs, Ref{Kind: l.kind.name, Namespace: l.obj.GetNamespace(), Name: l.obj.GetName()})
	}
	return jobs
}

// namesakes are the jobs of other kinds than the job's that have its name
// in its namespace, as named tells them apart: what the job made of its
// name is part of it.
func (c *Client) namesakes(ctx context.Context, job Ref) ([]Ref, error) {
	looked, err := c.lookFor(ctx, job.Namespace, job.Name, kinds)
	if err != nil {
		return nil, err
	}
	var others []Ref
	for _, r := range named(looked) {
		if r.Kind != job.Kind {
			others = append(others, r)
		}
	}
	return others, nil
}

// Qualified names the job with its kind, as a command line does to tell it
// from a job of another kind of its name: pytorchjob/llama.
func (r Ref) Qualified() string { return strings.ToLower(r.Kind) + "/" + r.Name }

// Ambiguous is the error of Find for a name that jobs of several kinds
// have.
type Ambiguous struct {
	Namespace, Name string
	Jobs            []Ref
}

func (e Ambiguous) Error() string {
	jobs := make([]string, len(e.Jobs))
	forms := make([]string, len(e.Jobs))
	for i, r := range e.Jobs {
		jobs[i], forms[i] = r.Kind+" "+r.Name, r.Qualified()
	}
	return fmt.Sprintf("%d jobs in namespace %q are named %q, %s; name one with its kind: %s",
		len(e.Jobs), e.Namespace, e.Name, sentence(jobs, "and"), sentence(forms, "or"))
}

// noSuchJob is the error for a name no job has among the kinds looked for:
// which the cluster does not serve, or the user may not read, and the jobs
// there are, with the closest.
func (c *Client) noSuchJob(ctx context.Context, namespace, name string, looked []lookup) error {
	var missing, unserved, forbidden []string
	var among []*kind
	for _, l := range looked {
		among = append(among, l.kind)
		switch {
		case apierrors.IsForbidden(l.err):
			forbidden = append(forbidden, Plural(l.kind.name))
		case !c.Serves(ctx, l.kind.resource):
			unserved = append(unserved, Plural(l.kind.name))
		default:
			missing = append(missing, l.kind.name)
		}
	}
	what, those := "job", "jobs"
	if len(among) == 1 {
		k := among[0]
		if len(unserved) > 0 {
			return NotServed{Kind: k.name, Resource: k.resource}
		}
		what, those = k.name, Plural(k.name)
	}
	msg := fmt.Sprintf("no %s %q in namespace %q", what, name, namespace)
	if len(missing) > 0 && len(among) > 1 {
		msg += ": no " + sentence(missing, "or") + " of that name"
	}
	if len(unserved) > 0 {
		msg += " (this cluster serves no " + sentence(unserved, "or") + ")"
	}
	if len(forbidden) > 0 {
		msg += "; you may not read " + sentence(forbidden, "or") + " there (RBAC)"
	}
	fix := "; check the name, and the namespace (-n NAMESPACE)"
	if len(missing) > 0 {
		list, closest := NameList(c.jobNames(ctx, namespace, among), name, those)
		if list == "" {
			list = "there are no " + those + " here"
		}
		msg += "; " + list
		if closest != "" {
			fix = fmt.Sprintf("; did you mean %q? Otherwise check the namespace (-n NAMESPACE)", closest)
		}
	}
	return NoSuchJob{Namespace: namespace, Name: name, message: msg + fix}
}

// NoSuchJob is the error of Find for a name no job has.
type NoSuchJob struct {
	Namespace, Name string
	message         string
}

func (e NoSuchJob) Error() string { return e.message }

// eachJob lists the jobs of each kind among in a namespace ("": in every
// namespace) that match a label selector, all kinds at once, and hands
// each job to take as it is read, one at a time: its metadata, and its
// JSON to read it whole when it is wanted. errs[i] is why among[i]'s could
// not be listed.
func (c *Client) eachJob(ctx context.Context, namespace, selector string, among []*kind, take func(k *kind, meta *metav1.PartialObjectMetadata, raw json.RawMessage)) []error {
	errs := make([]error, len(among))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, k := range among {
		wg.Go(func() {
			errs[i] = c.ObjectSource.Each(ctx, k.resource, namespace, metav1.ListOptions{LabelSelector: selector}, func(dec *json.Decoder) error {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fmt.Errorf("reading %s: %w", Indefinite(k.name), err)
				}
				meta, err := metaOf(raw)
				if err != nil {
					return fmt.Errorf("reading %s: %w", Indefinite(k.name), err)
				}
				mu.Lock()
				defer mu.Unlock()
				take(k, meta, raw)
				return nil
			})
		})
	}
	wg.Wait()
	return errs
}

// jobNames are the names of the jobs in a namespace, of the kinds among
// that the cluster serves and lets the user list.
func (c *Client) jobNames(ctx context.Context, namespace string, among []*kind) []string {
	var names []string
	c.eachJob(ctx, namespace, "", among, func(_ *kind, meta *metav1.PartialObjectMetadata, _ json.RawMessage) { names = append(names, meta.Name) })
	slices.Sort(names)
	return slices.Compact(names)
}

// NameList says which names there are, for the message of a missing one,
// "those here: a, b" (what is "those"): at most ten, and the closest to
// want; "" for none.
func NameList(names []string, want, what string) (list string, closest string) {
	names = slices.Clone(names)
	sort.Strings(names)
	lower := make([]string, len(names))
	for i, n := range names {
		lower[i] = strings.ToLower(n)
	}
	closest = settingsschema.Closest(want, names, lower)
	if len(names) == 0 {
		return "", ""
	}
	more := ""
	if len(names) > 10 {
		more = fmt.Sprintf(" and %d more", len(names)-10)
		names = names[:10]
	}
	return what + " here: " + strings.Join(names, ", ") + more, closest
}

// sentence writes words as a sentence does: "a, b or c".
func sentence(words []string, conjunction string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conjunction + " " + words[len(words)-1]
}

// Indefinite is a kind with its indefinite article, as messages write it:
// an AppWrapper, a PyTorchJob.
func Indefinite(kind string) string {
	if kind != "" && strings.ContainsAny(strings.ToUpper(kind[:1]), "AEIOU") {
		return "an " + kind
	}
	return "a " + kind
}
