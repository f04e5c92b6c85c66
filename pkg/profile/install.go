package profile

// What an administrator applies to give a cluster (or one namespace) its
// profile: the ConfigMap that holds the profile's text, where every user of
// the namespace finds it; for the cluster's, the Role and RoleBinding that
// let every user read it; and the ValidatingAdmissionPolicy of its rules
// with its binding, so that the API server enforces them on every job.

// Placement says where a profile applies: Namespace "" for every namespace
// (the cluster's), else that namespace.
type Placement struct{ Namespace string }

// home is the namespace of the ConfigMap that holds the profile.
func (pl Placement) home() string {
	if pl.Namespace == "" {
		return ClusterNamespace
	}
	return pl.Namespace
}

// policyName names the policy and its binding: torchwrap-profile for the
// cluster's, torchwrap-profile.NAMESPACE for a namespace's (a namespace's
// name holds no dot).
func (pl Placement) policyName() string {
	if pl.Namespace == "" {
		return ConfigMapName
	}
	return ConfigMapName + "." + pl.Namespace
}

// managedBy marks the objects generator writes for a profile.
var managedBy = map[string]any{"app.kubernetes.io/managed-by": "torchwrap-generator"}

// readerRole lets every user read the cluster's profile, and nothing else
// in its namespace.
const readerRole = ConfigMapName + "-reader"

// Objects are what to apply for the profile read from src at pl: the
// profile must have no problems. version is the generator's, which the
// objects are annotated with.
func Objects(src Source, pl Placement, version string) ([]map[string]any, []Unchecked, error) {
	p, err := Read(src)
	if err != nil {
		return nil, nil, err
	}
	if problems := p.Problems(); len(problems) > 0 {
		return nil, nil, Invalid{problems}
	}
	meta := func(name, namespace string) map[string]any {
		m := map[string]any{"name": name, "labels": managedBy, "annotations": map[string]any{"torchwrap.dev/generator-version": version}}
		if namespace != "" {
			m["namespace"] = namespace
		}
		return m
	}
	objects := []map[string]any{{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(ConfigMapName, pl.home()),
		"data": map[string]any{ConfigMapKey: string(src.Data)},
	}}
	if pl.Namespace == "" {
		objects = append(objects, map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(readerRole, ClusterNamespace),
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "resourceNames": []any{ConfigMapName}, "verbs": []any{"get"}}},
		}, map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(readerRole, ClusterNamespace),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": readerRole},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}},
		})
	}
	variables, validations, unchecked := p.Policy()
	if len(validations) == 0 {
		return objects, unchecked, nil
	}
	var list, vars []any
	for _, v := range validations {
		list = append(list, map[string]any{"expression": v.Expression, "message": v.Message})
	}
	for _, v := range variables {
		vars = append(vars, map[string]any{"name": v.Name, "expression": v.Expression})
	}
	var rules []any
	for _, k := range policyKinds {
		rules = append(rules, map[string]any{"apiGroups": []any{k.group}, "apiVersions": []any{"*"}, "operations": []any{"CREATE", "UPDATE"}, "resources": k.resources})
	}
	binding := map[string]any{"policyName": pl.policyName(), "validationActions": []any{"Deny"}}
	if pl.Namespace != "" {
		binding["matchResources"] = map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": pl.Namespace}}}
	}
	objects = append(objects, map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": meta(pl.policyName(), ""),
		"spec": map[string]any{
			"failurePolicy":    "Fail",
			"matchConstraints": map[string]any{"resourceRules": rules},
			"matchConditions":  []any{map[string]any{"name": "not-made-by-another-job", "expression": notMadeByAnotherJob}},
			"variables":        vars,
			"validations":      list,
		},
	}, map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta(pl.policyName(), ""),
		"spec": binding,
	})
	return objects, unchecked, nil
}

// policyKinds are the resources of the kinds generator writes, which the
// policy checks.
var policyKinds = []struct {
	group     string
	resources []any
}{
	{"workload.codeflare.dev", []any{"appwrappers"}},
	{"kubeflow.org", []any{"pytorchjobs"}},
	{"jobset.x-k8s.io", []any{"jobsets"}},
	{"trainer.kubeflow.org", []any{"trainjobs"}},
	{"batch.tensorstack.dev", []any{"pytorchtrainingjobs", "deepspeedjobs"}},
}

// notMadeByAnotherJob leaves to the policy the jobs that no AppWrapper or
// TrainJob made: an AppWrapper's job and a TrainJob's JobSet are checked in
// the object they come from, whose controller makes them (the job inside
// an AppWrapper carries no queue label, for one).
const notMadeByAnotherJob = "!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(o, has(o.controller) && o.controller && (o.kind == 'AppWrapper' || o.kind == 'TrainJob'))"
