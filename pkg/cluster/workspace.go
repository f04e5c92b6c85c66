package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/torchwrap/generator/pkg/workspace"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Carry gives the job the ConfigMaps of its workspace (render's
// Result.ConfigMaps), placed in its namespace.
func (j *Job) Carry(objects []map[string]any) {
	for _, obj := range objects {
		cm := &unstructured.Unstructured{Object: obj}
		cm.SetNamespace(j.Object.GetNamespace())
		j.Workspace = append(j.Workspace, cm)
	}
}

// Workspace is the workspace a job runs, as its annotations say: the
// digest of the packed folder, its files and bytes, the folder it was
// packed from, and the ConfigMaps that carry it.
type Workspace struct {
	Digest     string   `json:"digest"`
	Files      int      `json:"files"`
	Bytes      int64    `json:"bytes"`
	Folder     string   `json:"folder"`
	ConfigMaps []string `json:"configMaps"`
}

// WorkspaceOf reads the workspace of a job from its annotations; nil when
// it ships none.
func WorkspaceOf(obj *unstructured.Unstructured) *Workspace {
	p := workspace.Read(obj.GetAnnotations())
	if p == nil {
		return nil
	}
	return &Workspace{Digest: p.Digest, Files: p.Files, Bytes: p.Bytes, Folder: p.Folder, ConfigMaps: workspace.Names(obj.GetName(), p.Parts)}
}

// Line says a workspace in a line, as workspace.Packed does.
func (w Workspace) Line() string {
	return (&workspace.Packed{Digest: w.Digest, Files: w.Files, Bytes: w.Bytes, Folder: w.Folder}).Line()
}

// clearWorkspace makes room for a job's workspace: a ConfigMap of a name it
// takes that was left by a job of its name now gone (or by a submit that
// failed) is deleted; one that something else holds refuses the submit,
// before anything is made.
func (c *Client) clearWorkspace(ctx context.Context, job *Job) error {
	for _, cm := range job.Workspace {
		resource := c.Dynamic.Resource(configMaps).Namespace(cm.GetNamespace())
		old, err := resource.Get(ctx, cm.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return c.failed(err, "reading the ConfigMap "+cm.GetName())
		}
		holder, err := c.liveOwner(ctx, old)
		if err != nil {
			return err
		}
		if holder != "" || old.GetLabels()[workspace.JobLabel] != job.Object.GetName() {
			if holder == "" {
				holder = "something other than a workspace of this job"
			}
			return fmt.Errorf("the ConfigMap %q, where this job's workspace goes, exists in namespace %q, and holds %s; choose another jobName; nothing was submitted",
				old.GetName(), old.GetNamespace(), holder)
		}
		uid := old.GetUID()
		err = resource.Delete(ctx, old.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return c.failed(err, "deleting the ConfigMap "+old.GetName()+", left by a job of this name")
		}
	}
	return nil
}

// liveOwner names the owner of an object that still exists ("the
// workspace of PyTorchJob x"); "" when none does.
func (c *Client) liveOwner(ctx context.Context, obj *unstructured.Unstructured) (string, error) {
	for _, ref := range obj.GetOwnerReferences() {
		k := kindNamed(ref.Kind)
		if k == nil {
			return fmt.Sprintf("the workspace of %s %q", ref.Kind, ref.Name), nil
		}
		owner, err := c.Dynamic.Resource(k.resource).Namespace(obj.GetNamespace()).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", c.failed(err, "reading the owner of the ConfigMap "+obj.GetName())
		case owner.GetUID() == ref.UID:
			return fmt.Sprintf("the workspace of %s %q", ref.Kind, ref.Name), nil
		}
	}
	return "", nil
}

// shipWorkspace creates the ConfigMaps of a job's workspace, all at once,
// owned by the job as created (owner), so that Kubernetes' garbage
// collector deletes them with it, however it is deleted.
func (c *Client) shipWorkspace(ctx context.Context, job *Job, owner *unstructured.Unstructured) error {
	ref := metav1.OwnerReference{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID()}
	errs := make([]error, len(job.Workspace))
	var wg sync.WaitGroup
	for i, cm := range job.Workspace {
		cm = cm.DeepCopy()
		cm.SetOwnerReferences([]metav1.OwnerReference{ref})
		wg.Go(func() {
			_, err := c.Dynamic.Resource(configMaps).Namespace(cm.GetNamespace()).Create(ctx, cm, metav1.CreateOptions{FieldManager: FieldManager})
			if err != nil {
				errs[i] = c.failed(err, "creating the ConfigMap "+cm.GetName()+" of the workspace")
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteWorkspace deletes the ConfigMaps of a job's workspace (as its
// annotations name them) that the job owns; those already gone are no
// matter, nor those the user may not read or delete: the garbage collector
// deletes them after the job.
func (c *Client) deleteWorkspace(ctx context.Context, obj *unstructured.Unstructured) error {
	w := WorkspaceOf(obj)
	if w == nil {
		return nil
	}
	resource := c.Dynamic.Resource(configMaps).Namespace(obj.GetNamespace())
	var errs []error
	for _, name := range w.ConfigMaps {
		cm, err := resource.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			errs = append(errs, c.failed(err, "reading the ConfigMap "+name+" of the workspace"))
			continue
		}
		if !ownedBy(cm, obj.GetUID()) {
			continue
		}
		uid := cm.GetUID()
		err = resource.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			errs = append(errs, c.failed(err, "deleting the ConfigMap "+name+" of the workspace"))
		}
	}
	return errors.Join(errs...)
}
