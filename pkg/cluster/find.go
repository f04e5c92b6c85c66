package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	settingsschema "github.com/torchwrap/generator/schema"
)

// Find finds a submitted job by its name, in the order of kinds: an
// AppWrapper first, then a TrainJob, then a job submitted alone. The error
// is NoSuchJob when there is none of that name, Unreachable when the
// cluster does not answer.
func (c *Client) Find(ctx context.Context, namespace, name string) (Ref, error) {
	var looked, unserved, forbidden []string
	for _, k := range kinds {
		_, err := c.Dynamic.Resource(k.resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return Ref{Kind: k.name, Namespace: namespace, Name: name}, nil
		case c.Unreached(err) != nil:
			return Ref{}, c.Unreached(err)
		case apierrors.IsNotFound(err) && !c.Serves(ctx, k.resource):
			unserved = append(unserved, Plural(k.name))
		case apierrors.IsNotFound(err):
			looked = append(looked, k.name)
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, Plural(k.name))
		default:
			return Ref{}, fmt.Errorf("looking for a %s %q in namespace %q: %w", k.name, name, namespace, err)
		}
	}
	msg := fmt.Sprintf("no job %q in namespace %q", name, namespace)
	if len(looked) > 0 {
		msg += ": no " + sentence(looked, "or") + " of that name"
	}
	if len(unserved) > 0 {
		msg += " (this cluster serves no " + sentence(unserved, "or") + ")"
	}
	if len(forbidden) > 0 {
		msg += "; you may not read " + sentence(forbidden, "or") + " there (RBAC)"
	}
	fix := "; check the name, and the namespace (-n NAMESPACE)"
	if len(looked) > 0 {
		list, closest := NameList(c.jobNames(ctx, namespace), name, "jobs")
		if list == "" {
			list = "there are no jobs here"
		}
		msg += "; " + list
		if closest != "" {
			fix = fmt.Sprintf("; did you mean %q? Otherwise check the namespace (-n NAMESPACE)", closest)
		}
	}
	return Ref{}, NoSuchJob{Namespace: namespace, Name: name, message: msg + fix}
}

// NoSuchJob is the error of Find for a name no job has.
type NoSuchJob struct {
	Namespace, Name string
	message         string
}

func (e NoSuchJob) Error() string { return e.message }

// jobNames are the names of the jobs in a namespace, of every kind the
// cluster serves and lets the user list.
func (c *Client) jobNames(ctx context.Context, namespace string) []string {
	seen := map[string]bool{}
	var names []string
	for _, k := range kinds {
		list, err := c.Dynamic.Resource(k.resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, item := range list.Items {
			if !seen[item.GetName()] {
				seen[item.GetName()] = true
				names = append(names, item.GetName())
			}
		}
	}
	return names
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
