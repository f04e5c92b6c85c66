// Package accelerator knows the extended resources that are accelerators:
// the devices numGpusPerPod counts, whatever their vendor, torchrun starting
// one process per device. It tells them from the other extended resources
// of a pod (RDMA devices, hugepages), for the commands that read jobs: the
// GPUs that list, status and check count, the devices run --local finds on
// this machine, what import carries. docs/accelerators.md has the sources
// of each vendor's facts.
package accelerator

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Vendor is a kind of accelerator and the resources its device plugin
// advertises.
type Vendor struct {
	// Name is how messages name one device: "AMD GPU".
	Name string
	// Resources are the resources of the vendor's device plugin, exactly;
	// Prefixes the starts of the names of a family (a MIG slice's profile,
	// an Ascend chip's model).
	Resources, Prefixes []string
	// NCCL tells whether the collective library behind the distributed
	// backend reads NCCL's variables: NCCL itself, or AMD's RCCL.
	NCCL bool
	// Collective is that library, for messages.
	Collective string
	// Devices are the device files of one device on a machine, a glob.
	Devices string
}

// Vendors are the accelerators known here, NVIDIA's GPU first.
var Vendors = []Vendor{
	{Name: "NVIDIA GPU", Resources: []string{Default}, NCCL: true, Collective: "NCCL", Devices: "/dev/nvidia[0-9]*"},
	{Name: "NVIDIA MIG slice", Prefixes: []string{"nvidia.com/mig-"}, NCCL: true, Collective: "NCCL", Devices: "/dev/nvidia[0-9]*"},
	{Name: "AMD GPU", Resources: []string{"amd.com/gpu"}, NCCL: true, Collective: "RCCL", Devices: "/dev/dri/renderD*"},
	{Name: "Intel Gaudi", Prefixes: []string{"habana.ai/"}, Collective: "Habana's HCCL", Devices: "/dev/accel/accel[0-9]*"},
	{Name: "Hygon DCU", Resources: []string{"hygon.com/dcu"}, NCCL: true, Collective: "RCCL", Devices: "/dev/dri/renderD*"},
	{Name: "Huawei Ascend NPU", Prefixes: []string{"huawei.com/Ascend"}, Collective: "Ascend's HCCL", Devices: "/dev/davinci[0-9]*"},
}

// Default is the accelerator resource of settings that name none.
const Default = "nvidia.com/gpu"

// Of is the vendor of an accelerator resource; false when the name is not
// one known here.
func Of(name string) (Vendor, bool) {
	for _, v := range Vendors {
		if slices.Contains(v.Resources, name) || slices.ContainsFunc(v.Prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			return v, true
		}
	}
	return Vendor{}, false
}

// IsNVIDIA tells whether a resource is NVIDIA's: a GPU, a MIG slice, or
// another of its device plugin's names.
func IsNVIDIA(name string) bool { return strings.HasPrefix(name, "nvidia.com/") }

// In is the accelerators of a list of resources: the name and count of the
// one Pick picks of those it asks for, or "" and zero.
func In(list corev1.ResourceList) (corev1.ResourceName, resource.Quantity) {
	var names []string
	for name, q := range list {
		if !q.IsZero() {
			names = append(names, string(name))
		}
	}
	name := corev1.ResourceName(Pick(names))
	return name, list[name]
}

// Pick is the accelerator of a pod's resources: of the names known here,
// the first in the order of Vendors, then of names; "" for none.
func Pick(names []string) string {
	var known []string
	for _, name := range names {
		if _, ok := Of(name); ok {
			known = append(known, name)
		}
	}
	if len(known) == 0 {
		return ""
	}
	return slices.MinFunc(known, func(a, b string) int { return cmp.Or(rank(a)-rank(b), strings.Compare(a, b)) })
}

// rank is the place of a resource's vendor in Vendors.
func rank(name string) int {
	v, _ := Of(name)
	return slices.IndexFunc(Vendors, func(w Vendor) bool { return w.Name == v.Name })
}

// Here counts the devices of a vendor on this machine.
func (v Vendor) Here() int {
	devices, _ := filepath.Glob(v.Devices)
	return len(devices)
}
