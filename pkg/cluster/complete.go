package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Complete completes a job's name as a command line gives it (NAME, or
// KIND/NAME): the names in the namespace that begin with what is typed,
// each job once as list shows it (a job another made is part of that one),
// sorted. They are the generator's own jobs (with its Marker), or every
// job when none of those begins so. The error is Unreachable when the
// cluster does not answer.
func (c *Client) Complete(ctx context.Context, namespace, typed string) ([]string, error) {
	among, prefix, kindWord := kinds, typed, ""
	if word, rest, qualified := strings.Cut(typed, "/"); qualified {
		k := kindCalled(word)
		if k == nil {
			return nil, nil
		}
		among, prefix, kindWord = []*kind{k}, rest, word+"/"
	}
	var ours, all []string
	errs := c.eachJob(ctx, namespace, "", among, func(_ *kind, meta *metav1.PartialObjectMetadata, _ json.RawMessage) {
		if made(meta) || !strings.HasPrefix(meta.Name, prefix) {
			return
		}
		all = append(all, kindWord+meta.Name)
		if meta.Annotations[Marker] != "" {
			ours = append(ours, kindWord+meta.Name)
		}
	})
	// Kinds not served here, or not to be listed, are left out.
	for _, err := range errs {
		if err := c.Unreached(err); err != nil {
			return nil, err
		}
	}
	if len(ours) > 0 {
		all = ours
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// Roles are what logs --role takes for a job: the roles of its pods, and
// each pod by role and index (master, master-0, worker, worker-0,
// worker-1), in the order of the pods' node ranks. A pod whose place is not
// known has none.
func (c *Client) Roles(ctx context.Context, ref Ref) ([]string, error) {
	obj, err := c.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	podList, err := c.podsOf(ctx, obj)
	if err != nil {
		return nil, err
	}
	k := kindOf(obj)
	var members []Member
	for i := range podList {
		if m, known := k.member(obj.Object, &podList[i]); known {
			members = append(members, m)
		}
	}
	slices.SortStableFunc(members, func(a, b Member) int { return a.Rank - b.Rank })
	var roles []string
	for _, m := range members {
		for _, role := range []string{m.Role, m.String()} {
			if !slices.Contains(roles, role) {
				roles = append(roles, role)
			}
		}
	}
	return roles, nil
}
