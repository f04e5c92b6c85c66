// Package gitops evaluates the health checks of docs/gitops as the GitOps
// tools evaluate them: the Lua of argocd-cm.yaml as Argo CD runs it, the CEL
// of flux-kustomization.yaml as Flux's kustomize-controller runs it, and
// kstatus, what Flux reads of an object without them. The objects they are
// tested on are recorded from the simulated cluster (testdata/gitops/objects,
// written by the e2e test's health scenario under -record).
package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	fluxstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/torchwrap/generator/testdata/cases"
)

// Record makes the e2e test's health scenario write the objects it sees to
// testdata/gitops/objects.
var Record = flag.Bool("record", false, "write the objects of the health scenario to testdata/gitops/objects")

// ObjectsDir is the folder of the recorded objects.
func ObjectsDir(t testing.TB) string { return cases.Path(t, "testdata", "gitops", "objects") }

// Health is what each tool says of one object.
type Health struct {
	// Argo is Argo CD's health status and message, from the Lua.
	Argo, ArgoMessage string
	// Flux is the status Flux's CEL expressions give.
	Flux string
	// KStatus is kstatus's status of the object alone (sigs.k8s.io/cli-utils),
	// and its message; FluxKStatus the same from Flux's fork of it
	// (github.com/fluxcd/cli-utils), which Flux runs.
	KStatus, KStatusMessage, FluxKStatus string
}

func (h Health) String() string {
	return fmt.Sprintf("Argo CD %s (%q), Flux CEL %s, kstatus %s (%q), Flux's kstatus %s", h.Argo, h.ArgoMessage, h.Flux, h.KStatus, h.KStatusMessage, h.FluxKStatus)
}

// Checks are the health checks of docs/gitops.
type Checks struct {
	// Lua are argocd-cm's health scripts, by the key's group_Kind.
	Lua map[string]string
	// CEL are the Kustomization's healthCheckExprs, by group/Kind.
	CEL map[string]Exprs
}

// Exprs are one healthCheckExprs entry.
type Exprs struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Current    string `json:"current"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
}

// Load reads docs/gitops/argocd-cm.yaml and flux-kustomization.yaml.
func Load(t testing.TB) Checks {
	t.Helper()
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	read(t, cases.Path(t, "docs", "gitops", "argocd-cm.yaml"), &cm)
	require.Equal(t, "ConfigMap", cm.Kind)
	checks := Checks{Lua: map[string]string{}, CEL: map[string]Exprs{}}
	for key, script := range cm.Data {
		name, ok := strings.CutPrefix(key, "resource.customizations.health.")
		require.True(t, ok, "argocd-cm key %s", key)
		checks.Lua[name] = script
	}
	var ks struct {
		Kind string `json:"kind"`
		Spec struct {
			HealthCheckExprs []Exprs `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	read(t, cases.Path(t, "docs", "gitops", "flux-kustomization.yaml"), &ks)
	require.Equal(t, "Kustomization", ks.Kind)
	for _, e := range ks.Spec.HealthCheckExprs {
		gk := schema.FromAPIVersionAndKind(e.APIVersion, e.Kind).GroupKind()
		_, twice := checks.CEL[gk.String()]
		require.False(t, twice, "two healthCheckExprs for %s", gk)
		checks.CEL[gk.String()] = e
	}
	return checks
}

func read(t testing.TB, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, sigsyaml.Unmarshal(data, out), path)
}

// Object reads a recorded object as the API server's JSON decodes it
// (integers as int64).
func Object(t testing.TB, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data, err = sigsyaml.YAMLToJSON(data)
	require.NoError(t, err)
	obj := &unstructured.Unstructured{}
	require.NoError(t, obj.UnmarshalJSON(data), path)
	return obj
}

// Evaluate runs every check on the object.
func (c Checks) Evaluate(obj *unstructured.Unstructured) (Health, error) {
	var h Health
	var err error
	gk := obj.GroupVersionKind().GroupKind()
	script, ok := c.Lua[gk.Group+"_"+gk.Kind]
	if !ok {
		return h, fmt.Errorf("argocd-cm has no health check for %s", gk)
	}
	if h.Argo, h.ArgoMessage, err = ArgoCD(script, obj); err != nil {
		return h, fmt.Errorf("Argo CD's Lua: %w", err)
	}
	exprs, ok := c.CEL[gk.String()]
	if !ok {
		return h, fmt.Errorf("the Kustomization has no healthCheckExprs for %s", gk)
	}
	if h.Flux, err = Flux(exprs, obj); err != nil {
		return h, fmt.Errorf("Flux's CEL: %w", err)
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return h, fmt.Errorf("kstatus: %w", err)
	}
	h.KStatus, h.KStatusMessage = res.Status.String(), res.Message
	fluxRes, err := fluxstatus.Compute(obj)
	if err != nil {
		return h, fmt.Errorf("Flux's kstatus: %w", err)
	}
	h.FluxKStatus = fluxRes.Status.String()
	return h, nil
}

// ArgoCD runs a health script as Argo CD does (util/lua in argoproj/argo-cd):
// gopher-lua with only its package, base and table libraries open (Argo CD
// adds a safe os library, which these scripts do not use), the object as the
// global obj, maps as tables and numbers as Lua numbers, one second at most;
// the table it returns is its health, whose status must be one Argo CD knows.
func ArgoCD(script string, obj *unstructured.Unstructured) (status, message string, err error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return "", "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return "", "", err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	status, message = lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
	switch status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
	default:
		return "", "", fmt.Errorf("the script returned the status %q, which Argo CD takes for Unknown", status)
	}
	return status, message, nil
}

// luaValue is a value of the object as Argo CD gives it to Lua.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(luaValue(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), luaValue(l, item))
		}
		return t
	}
	return lua.LNil
}

// Flux evaluates healthCheckExprs as kustomize-controller does (fluxcd/pkg
// runtime/cel: StatusEvaluator and NewExpression): an object whose
// status.observedGeneration is not its metadata.generation is InProgress;
// then inProgress, failed and current, parsed (not compiled) in CEL's
// environment with Flux's options, each evaluated with the object's top-level
// fields as variables; the first true gives the status, InProgress if none.
// An expression that fails to evaluate is an error, which Flux reports as the
// object's status Unknown and waits.
func Flux(e Exprs, obj *unstructured.Unstructured) (string, error) {
	o := obj.UnstructuredContent()
	if observed, ok, err := unstructured.NestedInt64(o, "status", "observedGeneration"); err == nil && ok {
		if generation, ok, err := unstructured.NestedInt64(o, "metadata", "generation"); err == nil && ok && observed != generation {
			return "InProgress", nil
		}
	}
	if e.Current == "" {
		return "", errors.New("current is required")
	}
	for _, step := range []struct{ expr, status string }{{e.InProgress, "InProgress"}, {e.Failed, "Failed"}, {e.Current, "Current"}} {
		if step.expr == "" {
			continue
		}
		ok, err := evalBool(step.expr, o)
		if err != nil {
			return "", err
		}
		if ok {
			return step.status, nil
		}
	}
	return "InProgress", nil
}

func evalBool(expr string, vars map[string]any) (bool, error) {
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true), cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(), ext.Strings(), ext.Sets(), ext.Encoders())
	if err != nil {
		return false, err
	}
	ast, issues := env.Parse(expr)
	if issues != nil && issues.Err() != nil {
		return false, fmt.Errorf("parsing %q: %w", expr, issues.Err())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
	if err != nil {
		return false, err
	}
	val, _, err := prog.ContextEval(context.Background(), vars)
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	b, ok := val.(celtypes.Bool)
	if !ok {
		return false, fmt.Errorf("%q is %s, not a boolean", expr, val.Type())
	}
	return bool(b), nil
}

// Strip is an object as it is recorded: without its managedFields.
func Strip(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	obj.SetManagedFields(nil)
	return obj
}
