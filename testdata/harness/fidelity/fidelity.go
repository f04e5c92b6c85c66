// Package fidelity checks rendered manifests the way a cluster will: the
// upstream CRDs with Kubernetes' own custom-resource validation, strict
// decoding of every PodSpec, the AppWrapper controller's podSet resolution,
// and the wrapped job's admission webhook. A manifest that passes is one the
// API server, Kueue, the AppWrapper controller and the job's operator accept.
//
// Only tests use this package: it must never be linked into the generator
// binary (a test checks), as it pulls in large parts of Kubernetes.
package fidelity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	trainingv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/webhooks/pytorch"
	awv1beta2 "github.com/project-codeflare/appwrapper/api/v1beta2"
	awutils "github.com/project-codeflare/appwrapper/pkg/utils"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// The layers of checking; each Finding names the one that found it.
const (
	LayerCRD               = "CRD"                // the kind's CRD, as the API server validates a create with strict field validation
	LayerPodSpec           = "PodSpec"            // a pod template decoded strictly as core/v1
	LayerPodSets           = "podSets"            // the AppWrapper controller's podSet resolution
	LayerAppWrapperWebhook = "AppWrapper webhook" // the other rules of AppWrapper's validating webhook
	LayerJobWebhook        = "job webhook"        // the wrapped job's own validating webhook
	LayerManifest          = "manifest"           // the YAML stream itself
	LayerConfigMap         = "ConfigMap"          // a ConfigMap (--workspace, helmHook) decoded strictly as core/v1
	maxPodSets             = 8                    // Kueue's limit on podSets per workload
	defaultNamespace       = "default"            // what kubectl apply gives objects without a namespace
)

// Finding is one reason a cluster would refuse the manifest.
type Finding struct {
	Layer   string
	Object  string // kind/name, and the wrapped object when it is one
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("[%s] %s: %s", f.Layer, f.Object, f.Message) }

// Findings is the error of a manifest a cluster would refuse.
type Findings []Finding

func (fs Findings) Error() string {
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Layers lists the layers that found something.
func (fs Findings) Layers() []string {
	var layers []string
	for _, f := range fs {
		if !slices.Contains(layers, f.Layer) {
			layers = append(layers, f.Layer)
		}
	}
	return layers
}

// UpstreamCRD is a CRD file in a pinned upstream Go module, with its checksum
// (or, for TorchDistributedRuntime, another file read the same way).
type UpstreamCRD struct {
	Module, Path, SHA256 string
}

// The upstream CRDs. The PyTorchJob CRD left kubeflow/trainer's main branch
// with the training operator v1; v1.9.4, of the release-1.9 branch, is the
// newest release that has it. Trainer v2 (module github.com/kubeflow/trainer/v2)
// serves TrainJob and ClusterTrainingRuntime, whose CRD the simulated cluster
// installs.
var (
	AppWrapperCRD = UpstreamCRD{
		Module: "github.com/project-codeflare/appwrapper@v1.2.0",
		Path:   "config/crd/bases/workload.codeflare.dev_appwrappers.yaml",
		SHA256: "4d7fc68313b2df9523d997c251a86ef1dbaa903003a27ca8f4b09ca6f6fee009",
	}
	PyTorchJobCRD = UpstreamCRD{
		Module: "github.com/kubeflow/trainer@v1.9.4",
		Path:   "manifests/base/crds/kubeflow.org_pytorchjobs.yaml",
		SHA256: "8b8a8a719cc94173169290251e817f7ac2bb425c20b6c2fa813397bcf4e932ed",
	}
	JobSetCRD = UpstreamCRD{
		Module: "sigs.k8s.io/jobset@v0.12.0",
		Path:   "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
		SHA256: "d022b87624512cf0b6741b31b24a2bea9945b5a838b50713af29332c878bb6fe",
	}
	TrainJobCRD = UpstreamCRD{
		Module: "github.com/kubeflow/trainer/v2@v2.3.0",
		Path:   "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
		SHA256: "a742cafc5b5582640c7e0b7467c024fc237256fbca5ba0a9f0531dfb66d64416",
	}
	// TorchDistributedRuntime, not a CRD but read the same way, is the
	// trainer's ClusterTrainingRuntime torch-distributed (the generator's
	// default trainingRuntime), against which the TrainJob rules check a
	// TrainJob's runtime patches.
	TorchDistributedRuntime = UpstreamCRD{
		Module: "github.com/kubeflow/trainer/v2@v2.3.0",
		Path:   "manifests/base/runtimes/torch_distributed.yaml",
		SHA256: "c4520df54615d481831d402e644dbeaf77a7a521eae87b2e80fd5f789aac5df2",
	}
	ClusterTrainingRuntimeCRD = UpstreamCRD{
		Module: "github.com/kubeflow/trainer/v2@v2.3.0",
		Path:   "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
		SHA256: "ec84dc3388fcdbe8c61d3c247a773d14458dd9438e995bea8e50d2a18080eef9",
	}
)

// UpstreamCRDs lists every upstream CRD, in the order above.
var UpstreamCRDs = []UpstreamCRD{AppWrapperCRD, PyTorchJobCRD, JobSetCRD, TrainJobCRD, ClusterTrainingRuntimeCRD}

// Read returns the CRD file from the Go module cache, downloading the module
// through the module proxy when it is not there yet, and checks its checksum.
func (u UpstreamCRD) Read() ([]byte, error) {
	cmd := exec.Command("go", "mod", "download", "-json", u.Module)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download %s: %v: %s", u.Module, err, stderr.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" {
		return nil, fmt.Errorf("go mod download %s: %v%s", u.Module, err, info.Error)
	}
	data, err := os.ReadFile(filepath.Join(info.Dir, u.Path))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != u.SHA256 {
		return nil, fmt.Errorf("%s in %s has sha256 %s, expected %s", u.Path, u.Module, got, u.SHA256)
	}
	return data, nil
}

// CRD validates custom resources of one kind as the API server does on create.
type CRD struct {
	GVK        schema.GroupVersionKind
	structural *structuralschema.Structural
	validate   func(context.Context, *unstructured.Unstructured) []string
}

// ParseCRD reads a CustomResourceDefinition (YAML) for its storage version.
func ParseCRD(data []byte) (*CRD, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := sigsyaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		structural, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		strategy := customresource.NewStrategy(nil, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, gvk, validator, nil, structural, nil, nil, nil)
		return &CRD{GVK: gvk, structural: structural, validate: func(ctx context.Context, u *unstructured.Unstructured) []string {
			var msgs []string
			for _, e := range strategy.Validate(ctx, u) {
				msgs = append(msgs, e.Error())
			}
			return msgs
		}}, nil
	}
	return nil, fmt.Errorf("CRD %s has no storage version", crd.Name)
}

// Validate checks obj as the API server checks a create with
// --validate=strict: unknown fields (at the root, in metadata and in embedded
// objects) are errors, then defaults apply and the CRD's schema, metadata
// rules and CEL rules are checked. obj is not modified.
func (c *CRD) Validate(obj map[string]any) []string {
	_, msgs := c.Admit(obj)
	return msgs
}

// Admit validates obj as Validate does and returns it as the API server hands
// it to admission webhooks: in the default namespace when it has none, with
// unknown fields pruned and the CRD's defaults applied.
func (c *CRD) Admit(obj map[string]any) (map[string]any, []string) {
	u := &unstructured.Unstructured{Object: normalize(obj)}
	if u.GetNamespace() == "" {
		u.SetNamespace(defaultNamespace)
	}
	_, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return u.Object, []string{err.Error()}
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, c.structural)
	coerceErr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, c.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if coerceErr != nil {
		return u.Object, []string{coerceErr.Error()}
	}
	var msgs []string
	for _, p := range append(unknown, paths...) {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", p))
	}
	structuraldefaulting.Default(u.Object, c.structural)
	return u.Object, append(msgs, c.validate(context.Background(), u)...)
}

// Checker checks manifests against every layer.
type Checker struct {
	appWrapper *CRD
	kinds      map[schema.GroupVersionKind]jobKind
}

// jobKind is what the checker knows of a kind of job the generator renders.
type jobKind struct {
	// check runs the kind's CRD and admission webhook on one object.
	check func(name string, obj map[string]any) Findings
	// templates lists the object's pod templates, found without AppWrapper's
	// help: every one must be a podSet, with its exact replica count.
	templates func(obj map[string]any) []podTemplate
	// unwrappable says why an AppWrapper cannot wrap the kind; empty when it
	// can.
	unwrappable string
}

type podTemplate struct {
	path     string // AppWrapper podSet path syntax
	replicas int64
}

// NewChecker reads the upstream CRDs from the Go module cache.
func NewChecker() (*Checker, error) {
	appWrapper, err := readCRD(AppWrapperCRD)
	if err != nil {
		return nil, err
	}
	pytorchJob, err := readCRD(PyTorchJobCRD)
	if err != nil {
		return nil, err
	}
	jobSet, err := readCRD(JobSetCRD)
	if err != nil {
		return nil, err
	}
	jobSetAdmission, err := newJobSetWebhook()
	if err != nil {
		return nil, err
	}
	trainJob, err := readCRD(TrainJobCRD)
	if err != nil {
		return nil, err
	}
	runtimeData, err := TorchDistributedRuntime.Read()
	if err != nil {
		return nil, err
	}
	runtimeName, runtime, err := parseTrainingRuntime(runtimeData)
	if err != nil {
		return nil, err
	}
	trainJobAdmission := trainJobWebhook{runtimes: map[string]trainingRuntime{runtimeName: runtime}}
	c := &Checker{appWrapper: appWrapper, kinds: map[schema.GroupVersionKind]jobKind{
		pytorchJob.GVK: {
			check: func(name string, obj map[string]any) Findings {
				return append(crdFindings(name, pytorchJob.Validate(obj)), pyTorchJobWebhook(name, obj)...)
			},
			templates: pyTorchJobTemplates,
		},
		jobSet.GVK: {
			check: func(name string, obj map[string]any) Findings {
				stored, msgs := jobSet.Admit(obj)
				return append(crdFindings(name, msgs), jobSetAdmission.check(name, stored)...)
			},
			templates: jobSetTemplates,
		},
		trainJob.GVK: {
			check: func(name string, obj map[string]any) Findings {
				stored, msgs := trainJob.Admit(obj)
				findings := append(crdFindings(name, msgs), checkPodTemplates(name, obj, trainJobPatchTemplates(obj))...)
				return append(findings, trainJobAdmission.check(name, stored)...)
			},
			unwrappable: trainJobUnwrappable,
		},
	}}
	t9kCRDs, err := T9kCRDs()
	if err != nil {
		return nil, err
	}
	for _, data := range t9kCRDs {
		crd, err := ParseCRD(data)
		if err != nil {
			return nil, err
		}
		c.kinds[crd.GVK] = jobKind{
			check: func(name string, obj map[string]any) Findings {
				return crdFindings(name, crd.Validate(obj))
			},
			templates: t9kTemplates,
		}
	}
	return c, nil
}

func readCRD(u UpstreamCRD) (*CRD, error) {
	data, err := u.Read()
	if err != nil {
		return nil, err
	}
	return ParseCRD(data)
}

// CheckManifest checks every object of a YAML stream.
func (c *Checker) CheckManifest(manifest []byte) Findings {
	objects, err := splitManifest(manifest)
	if err != nil {
		return Findings{{Layer: LayerManifest, Object: "manifest", Message: err.Error()}}
	}
	var findings Findings
	for _, obj := range objects {
		findings = append(findings, c.CheckObject(obj)...)
	}
	return findings
}

// CheckObject checks one object: an AppWrapper with what it wraps, or a job
// of a known kind on its own.
func (c *Checker) CheckObject(obj map[string]any) Findings {
	obj = normalize(obj)
	gvk := gvkOf(obj)
	name := gvk.Kind + "/" + nameOf(obj)
	switch gvk {
	case c.appWrapper.GVK:
		return c.checkAppWrapper(obj)
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		return checkConfigMap(name, obj)
	}
	kind, ok := c.kinds[gvk]
	if !ok {
		return Findings{{Layer: LayerManifest, Object: name, Message: "not a kind the generator renders"}}
	}
	return append(kind.check(name, obj), checkPodTemplates(name, obj, kind.templatePaths(obj))...)
}

// Wrapped returns the wrapped objects of an AppWrapper, in component order:
// the objects themselves, not copies.
func Wrapped(appWrapper map[string]any) []map[string]any {
	spec, _ := appWrapper["spec"].(map[string]any)
	components, _ := spec["components"].([]any)
	var wrapped []map[string]any
	for _, comp := range components {
		c, _ := comp.(map[string]any)
		template, _ := c["template"].(map[string]any)
		wrapped = append(wrapped, template)
	}
	return wrapped
}

func (c *Checker) checkAppWrapper(aw map[string]any) Findings {
	name := "AppWrapper/" + nameOf(aw)
	findings := crdFindings(name, c.appWrapper.Validate(aw))
	var typed awv1beta2.AppWrapper
	if err := lenientJSON(aw, &typed); err != nil {
		return findings // the CRD layer has said why
	}
	namespace := typed.Namespace
	if namespace == "" {
		namespace = defaultNamespace
	}
	total, counted := 0, true
	for i, comp := range typed.Spec.Components {
		obj := Wrapped(aw)[i]
		gvk := gvkOf(obj)
		where := fmt.Sprintf("%s component %d (%s/%s)", name, i, gvk.Kind, nameOf(obj))
		if gvk == c.appWrapper.GVK {
			findings = append(findings, Finding{Layer: LayerAppWrapperWebhook, Object: where, Message: "nested AppWrappers are forbidden"})
		}
		if ns := (&unstructured.Unstructured{Object: obj}).GetNamespace(); ns != "" && ns != namespace {
			findings = append(findings, Finding{Layer: LayerAppWrapperWebhook, Object: where, Message: fmt.Sprintf("namespace %q differs from the AppWrapper's %q", ns, namespace)})
		}
		kind, ok := c.kinds[gvk]
		if ok {
			findings = append(findings, kind.check(gvk.Kind+"/"+nameOf(obj), obj)...)
			findings = append(findings, checkPodTemplates(where, obj, kind.templatePaths(obj))...)
		} else {
			findings = append(findings, Finding{Layer: LayerManifest, Object: where, Message: "wraps a kind the generator does not render"})
		}
		if kind.unwrappable != "" {
			findings = append(findings, Finding{Layer: LayerPodSets, Object: where, Message: kind.unwrappable})
			counted = false
			continue
		}
		podSetFindings, count := c.checkPodSets(where, obj, comp.DeclaredPodSets)
		findings = append(findings, podSetFindings...)
		total += count
		counted = counted && count >= 0
	}
	if counted && (total < 1 || total > maxPodSets) {
		findings = append(findings, Finding{Layer: LayerPodSets, Object: name, Message: fmt.Sprintf("%d podSets in all; AppWrapper and Kueue need 1 to %d", total, maxPodSets)})
	}
	return findings
}

// checkPodSets resolves the podSets of a wrapped object as the AppWrapper
// webhook does (inferred for the kinds it knows, declared otherwise; the two
// must agree) and checks that they are exactly the object's pod templates
// with their replica counts. It returns the number of podSets the webhook
// counts, or -1 when it cannot tell.
func (c *Checker) checkPodSets(where string, obj map[string]any, declared []awv1beta2.AppWrapperPodSet) (Findings, int) {
	var findings Findings
	add := func(layer, format string, args ...any) {
		findings = append(findings, Finding{Layer: layer, Object: where, Message: fmt.Sprintf(format, args...)})
	}
	u := &unstructured.Unstructured{Object: obj}
	for _, ps := range declared {
		if _, err := awutils.GetPodTemplateSpec(u, ps.Path); err != nil {
			add(LayerPodSets, "declared podSet %s does not refer to a pod template: %v", ps.Path, err)
		}
	}
	count := -1
	inferred, err := awutils.InferPodSets(u)
	if err != nil {
		add(LayerPodSets, "inferring podSets: %v", err)
	} else if err := awutils.ValidatePodSets(declared, inferred); err != nil {
		add(LayerPodSets, "declared podSets: %v", err)
	} else {
		count = max(len(declared), len(inferred))
		effective := declared
		if len(effective) == 0 {
			effective = inferred
		}
		if len(effective) == 0 {
			add(LayerPodSets, "no podSets: the AppWrapper webhook refuses a component without pods")
		}
		if kind, ok := c.kinds[gvkOf(obj)]; ok {
			var got, want []podTemplate
			for _, ps := range effective {
				got = append(got, podTemplate{path: ps.Path, replicas: int64(awutils.Replicas(ps))})
			}
			want = kind.templates(obj)
			if !slices.Equal(got, want) {
				add(LayerPodSets, "podSets %v are not the job's pod templates %v", got, want)
			}
		}
	}
	return findings, count
}

// templatePaths lists the paths of the pod templates of obj, a job of this
// kind: none for a kind without templates.
func (k jobKind) templatePaths(obj map[string]any) []string {
	if k.templates == nil {
		return nil
	}
	var paths []string
	for _, t := range k.templates(obj) {
		paths = append(paths, t.path)
	}
	return paths
}

// checkPodTemplates decodes the pod templates of a job at paths (AppWrapper
// podSet path syntax) strictly as core/v1.
func checkPodTemplates(where string, obj map[string]any, paths []string) Findings {
	var findings Findings
	for _, path := range paths {
		raw, err := awutils.GetRawTemplate(obj, path)
		if err == nil {
			var template corev1.PodTemplateSpec
			err = strictJSON(raw, &template)
		}
		if err != nil {
			findings = append(findings, Finding{Layer: LayerPodSpec, Object: where, Message: fmt.Sprintf("%s: %v", path, err)})
		}
	}
	return findings
}

// pyTorchJobTemplates lists a PyTorchJob's pod templates: Master, then Worker.
func pyTorchJobTemplates(obj map[string]any) []podTemplate {
	specs, _, _ := unstructured.NestedMap(obj, "spec", "pytorchReplicaSpecs")
	var templates []podTemplate
	for _, replicaType := range []string{"Master", "Worker"} {
		spec, ok := specs[replicaType].(map[string]any)
		if !ok {
			continue
		}
		templates = append(templates, podTemplate{path: "template.spec.pytorchReplicaSpecs." + replicaType + ".template", replicas: intOr(spec, 1, "replicas")})
	}
	return templates
}

// t9kTemplates lists the pod templates of a T9k job: each entry of a
// PyTorchTrainingJob's replicaSpecs, in order, or a DeepSpeedJob's worker.
func t9kTemplates(obj map[string]any) []podTemplate {
	var templates []podTemplate
	specs, _, _ := unstructured.NestedSlice(obj, "spec", "replicaSpecs")
	for i, s := range specs {
		if spec, ok := s.(map[string]any); ok {
			templates = append(templates, podTemplate{path: fmt.Sprintf("template.spec.replicaSpecs[%d].template", i), replicas: intOr(spec, 1, "replicas")})
		}
	}
	if worker, found, _ := unstructured.NestedMap(obj, "spec", "worker"); found {
		templates = append(templates, podTemplate{path: "template.spec.worker.template", replicas: intOr(worker, 1, "replicas")})
	}
	return templates
}

// pyTorchJobWebhook runs the training operator's own validating webhook, on
// the object as its webhook server decodes it (unknown fields dropped).
func pyTorchJobWebhook(name string, obj map[string]any) Findings {
	var job trainingv1.PyTorchJob
	if err := lenientJSON(obj, &job); err != nil {
		return Findings{{Layer: LayerJobWebhook, Object: name, Message: "cannot decode: " + err.Error()}}
	}
	if job.Namespace == "" {
		job.Namespace = defaultNamespace
	}
	if _, err := (&pytorch.Webhook{}).ValidateCreate(context.Background(), &job); err != nil {
		return Findings{{Layer: LayerJobWebhook, Object: name, Message: err.Error()}}
	}
	return nil
}

// intOr returns the integer at fields of obj, or fallback when there is none
// (or not an integer: the CRD layer says so).
func intOr(obj map[string]any, fallback int64, fields ...string) int64 {
	n, found, err := unstructured.NestedInt64(obj, fields...)
	if !found || err != nil {
		return fallback
	}
	return n
}

func crdFindings(object string, msgs []string) Findings {
	var findings Findings
	for _, m := range msgs {
		findings = append(findings, Finding{Layer: LayerCRD, Object: object, Message: m})
	}
	return findings
}

// checkConfigMap checks a ConfigMap as the API server does: decoded
// strictly, its name a DNS subdomain, its keys valid ConfigMap keys.
func checkConfigMap(name string, obj map[string]any) Findings {
	var cm corev1.ConfigMap
	if err := strictJSON(obj, &cm); err != nil {
		return Findings{{Layer: LayerConfigMap, Object: name, Message: err.Error()}}
	}
	var findings Findings
	problems := validation.IsDNS1123Subdomain(cm.Name)
	for key := range cm.Data {
		problems = append(problems, validation.IsConfigMapKey(key)...)
	}
	for key := range cm.BinaryData {
		problems = append(problems, validation.IsConfigMapKey(key)...)
	}
	for _, m := range problems {
		findings = append(findings, Finding{Layer: LayerConfigMap, Object: name, Message: m})
	}
	return findings
}

// strictJSON decodes v's JSON form into out as the API server decodes typed
// objects with strict field validation: unknown, duplicate and wrongly cased
// fields are errors.
func strictJSON(v any, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(data, out)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// lenientJSON decodes v's JSON form into out, dropping unknown fields, as
// controllers and webhooks decode what the API server stored.
func lenientJSON(v any, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func splitManifest(manifest []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	var objects []map[string]any
	for {
		var node yaml.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			return objects, nil
		} else if err != nil {
			return nil, err
		}
		doc, err := yaml.Marshal(&node)
		if err != nil {
			return nil, err
		}
		data, err := sigsyaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil {
			return nil, err
		}
		if obj != nil {
			objects = append(objects, obj)
		}
	}
}

func gvkOf(obj map[string]any) schema.GroupVersionKind {
	return (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
}

func nameOf(obj map[string]any) string {
	return (&unstructured.Unstructured{Object: obj}).GetName()
}

// normalize copies obj into the types the API server decodes JSON into:
// whole numbers as int64, other numbers as float64.
func normalize(obj map[string]any) map[string]any {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("fidelity: object is not JSON: %v", err))
	}
	var out map[string]any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("fidelity: %v", err))
	}
	return out
}
