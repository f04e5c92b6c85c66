package fidelity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetwebhooks "sigs.k8s.io/jobset/pkg/webhooks"
)

// The paths of the JobSet controller's webhooks for JobSets, as its webhook
// configuration names them.
const (
	jobSetMutatePath   = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
	jobSetValidatePath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
)

// jobSetWebhook is the JobSet controller's own admission webhook, run in
// process: its webhook type is not exported, so it is set up, as the
// controller sets it up, on a controller manager that is never started (and
// so never reaches the unreachable API server of its configuration), and
// called through the manager's webhook handler.
type jobSetWebhook struct {
	handler http.Handler
}

func newJobSetWebhook() (*jobSetWebhook, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return nil, fmt.Errorf("JobSet webhook: %w", err)
	}
	if err := jobsetwebhooks.Setup(mgr); err != nil {
		return nil, fmt.Errorf("JobSet webhook: %w", err)
	}
	return &jobSetWebhook{handler: mgr.GetWebhookServer().WebhookMux()}, nil
}

// check admits obj, as the API server hands it to admission webhooks on
// create (CRD.Admit), as the JobSet controller's webhooks do: the mutating
// webhook's defaults first, then the validating webhook on the result.
func (w *jobSetWebhook) check(name string, obj map[string]any) Findings {
	fail := func(err error) Findings {
		return Findings{{Layer: LayerJobWebhook, Object: name, Message: err.Error()}}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return fail(err)
	}
	mutated, err := w.review(jobSetMutatePath, raw)
	if err != nil {
		return fail(err)
	}
	if mutated.Patch != nil {
		patch, err := jsonpatch.DecodePatch(mutated.Patch)
		if err != nil {
			return fail(err)
		}
		if raw, err = patch.Apply(raw); err != nil {
			return fail(err)
		}
	}
	if _, err := w.review(jobSetValidatePath, raw); err != nil {
		return fail(err)
	}
	return nil
}

// review sends a create of raw to the webhook at path and returns its
// response, or an error saying why it was refused.
func (w *jobSetWebhook) review(path string, raw []byte) (*admissionv1.AdmissionResponse, error) {
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("fidelity"),
			Kind:      metav1.GroupVersionKind{Group: jobsetv1alpha2.GroupVersion.Group, Version: jobsetv1alpha2.GroupVersion.Version, Kind: "JobSet"},
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		return nil, err
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	w.handler.ServeHTTP(rec, req)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
		return nil, fmt.Errorf("%s answered %d: %s", path, rec.Code, rec.Body.String())
	}
	if !review.Response.Allowed {
		return nil, fmt.Errorf("%s", review.Response.Result.Message)
	}
	return review.Response, nil
}

// jobSetTemplates lists a JobSet's pod templates, one for each replicated
// job, with the pods it runs: its replicas (Jobs) times the pods each Job
// runs at once, parallelism (1 when unset) or completions when fewer.
func jobSetTemplates(obj map[string]any) []podTemplate {
	jobs, _, _ := unstructured.NestedSlice(obj, "spec", "replicatedJobs")
	var templates []podTemplate
	for i, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok {
			continue
		}
		pods := intOr(job, 1, "template", "spec", "parallelism")
		if completions, found, _ := unstructured.NestedInt64(job, "template", "spec", "completions"); found {
			pods = min(pods, completions)
		}
		templates = append(templates, podTemplate{path: fmt.Sprintf("template.spec.replicatedJobs[%d].template.spec.template", i), replicas: intOr(job, 1, "replicas") * pods})
	}
	return templates
}
