// Package gpushare holds the fractional-GPU facts that admission, scheduler and binder
// must agree on: which pods ask for a fraction, which container gets it, how the
// ConfigMaps are named, and how a portion is computed and written.
package gpushare

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"kaiops.dev/lab/kai-standin/api"
)

const (
	EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	EnvNumOfGPUs      = "RUNAI_NUM_OF_GPUS"
	EnvGPUPortion     = "GPU_PORTION"
	// The binder updates this key only where an older pod's ConfigMap already has it.
	KeyRunaiVisibleDevices = "RUNAI-VISIBLE-DEVICES"

	sharedGPUSuffix = "shared-gpu"
	evarSuffix      = "-evar"
)

// CapabilityEnvOrder is the order in which admission appends the env vars, and the keys
// the binder writes into the capabilities ConfigMap.
var CapabilityEnvOrder = []string{EnvVisibleDevices, EnvNumOfGPUs, EnvGPUPortion}

// RequestsFraction is key presence only: an empty or invalid value still counts, so
// that validation can reject it.
func RequestsFraction(pod *corev1.Pod) bool {
	_, frac := pod.Annotations[api.AnnGPUFraction]
	_, mem := pod.Annotations[api.AnnGPUMemory]
	return frac || mem
}

// ContainerRef names the container that receives the fraction.
type ContainerRef struct {
	Index int
	Init  bool
}

// Container returns the referenced container inside pod.
func (r ContainerRef) Container(pod *corev1.Pod) *corev1.Container {
	if r.Init {
		return &pod.Spec.InitContainers[r.Index]
	}
	return &pod.Spec.Containers[r.Index]
}

// FractionContainer prefers an init container over a regular one of the same name,
// because that is the lookup order KAI uses.
func FractionContainer(pod *corev1.Pod) (ContainerRef, error) {
	name, ok := pod.Annotations[api.AnnFractionContainer]
	if !ok {
		if len(pod.Spec.Containers) == 0 {
			return ContainerRef{}, errors.New("pod has no containers")
		}
		return ContainerRef{Index: 0}, nil
	}
	for i, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return ContainerRef{Index: i, Init: true}, nil
		}
	}
	for i, c := range pod.Spec.Containers {
		if c.Name == name {
			return ContainerRef{Index: i}, nil
		}
	}
	return ContainerRef{}, fmt.Errorf("container with name %s not found for fraction request", name)
}

func indexText(ref ContainerRef) string {
	if ref.Init {
		return "i" + strconv.Itoa(ref.Index)
	}
	return strconv.Itoa(ref.Index)
}

// GeneratePrefix builds `<base>-<7 random>-shared-gpu`. The base is cut so that the
// longest name derived from it (capabilities name + "-evar", and the volume name) still
// fits in 63 characters.
func GeneratePrefix(pod *corev1.Pod, ref ContainerRef, random7 string) string {
	base := pod.Name
	if len(pod.OwnerReferences) > 0 {
		base = pod.OwnerReferences[0].Name
	}
	limit := 63 - 13 - len(sharedGPUSuffix) - (len(strconv.Itoa(ref.Index)) + 1) - 5
	if len(base) > limit {
		base = base[:limit]
	}
	base = strings.TrimRight(base, ".-")
	return fmt.Sprintf("%s-%s-%s", base, random7, sharedGPUSuffix)
}

// Prefix reads the prefix admission stored on the pod.
func Prefix(pod *corev1.Pod) (string, error) {
	p, ok := pod.Annotations[api.AnnSharedGPUConfigMap]
	if !ok || p == "" {
		return "", fmt.Errorf("no desired configmap name found in pod %s/%s annotations", pod.Namespace, pod.Name)
	}
	return p, nil
}

// CapabilitiesName is `<prefix>-<index>`, or `<prefix>-i<index>` for an init container.
func CapabilitiesName(prefix string, ref ContainerRef) string {
	return prefix + "-" + indexText(ref)
}

func EnvConfigMapName(capabilities string) string { return capabilities + evarSuffix }

var notVolumeChars = regexp.MustCompile(`[^a-z0-9-]+`)

// VolumeName turns a ConfigMap name into a valid volume name (DNS-1123 label).
func VolumeName(capabilities string) string {
	n := notVolumeChars.ReplaceAllString(strings.ToLower(capabilities+"-vol"), "-")
	return strings.Trim(n, "-")
}

// VisibleDevicesFromConfigMap says whether the container's NVIDIA_VISIBLE_DEVICES comes
// from a ConfigMap key (every pod this admission mutated) rather than the -evar path
// older pods use.
func VisibleDevicesFromConfigMap(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == EnvVisibleDevices {
			return e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil
		}
	}
	return false
}

// NumDevices is the number of fractional devices; 1 unless the annotation says more.
func NumDevices(pod *corev1.Pod) int {
	v, ok := pod.Annotations[api.AnnGPUFractionNumDevs]
	if !ok {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// MultiDevice pods carry their groups as `runai-gpu-group/<g>: <g>` labels.
func MultiDevice(pod *corev1.Pod) bool { return NumDevices(pod) > 1 }

// MemoryPortion rounds up to two decimals in integer arithmetic, so that exact values
// (5720 of 11440) stay exact and 2000 of 11441 gives 0.18.
func MemoryPortion(memMiB, gpuMemMiB int64) float64 {
	if gpuMemMiB <= 0 {
		return 0
	}
	hundredths := (memMiB*100 + gpuMemMiB - 1) / gpuMemMiB
	return float64(hundredths) / 100
}

// FormatPortion is the scheduler's decimal text of a portion.
func FormatPortion(p float64) string { return fmt.Sprintf("%.2f", p) }

// NodeGPUMemory reads the per-GPU memory (MiB) a node advertises.
func NodeGPUMemory(node *corev1.Node) (int64, bool) {
	v, ok := node.Labels[api.NodeLabelGPUMemMB]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// PodPortion is the per-device portion a fraction pod asks for; for gpu-memory pods it
// depends on the node, so node may be nil only for gpu-fraction pods.
func PodPortion(pod *corev1.Pod, node *corev1.Node) (float64, bool) {
	if v, ok := pod.Annotations[api.AnnGPUFraction]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	}
	if v, ok := pod.Annotations[api.AnnGPUMemory]; ok {
		mem, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mem <= 0 || node == nil {
			return 0, false
		}
		total, ok := NodeGPUMemory(node)
		if !ok {
			return 0, false
		}
		p := MemoryPortion(mem, total)
		if p > 1 {
			return 0, false
		}
		return p, true
	}
	return 0, false
}

func containerGPUs(c *corev1.Container) int64 {
	if q, ok := c.Resources.Limits[api.ResourceGPU]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[api.ResourceGPU]; ok {
		return q.Value()
	}
	return 0
}

// WholeGPUs follows the Kubernetes effective-request rule: the sum over regular
// containers or the largest init container, whichever is bigger.
func WholeGPUs(pod *corev1.Pod) int64 {
	var sum, initMax int64
	for i := range pod.Spec.Containers {
		sum += containerGPUs(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if g := containerGPUs(&pod.Spec.InitContainers[i]); g > initMax {
			initMax = g
		}
	}
	return max(sum, initMax)
}

// HasGPULimit: any container or init container with an nvidia.com/gpu limit.
func HasGPULimit(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if _, ok := c.Resources.Limits[api.ResourceGPU]; ok {
				return true
			}
		}
	}
	return false
}

// GPUGroups lists the groups a pod carries, in both label forms.
func GPUGroups(pod *corev1.Pod) []string {
	seen := map[string]bool{}
	var multi []string
	for k, v := range pod.Labels {
		if strings.HasPrefix(k, api.LabelGPUGroup+"/") && v != "" && !seen[v] {
			seen[v] = true
			multi = append(multi, v)
		}
	}
	sort.Strings(multi)
	if g, ok := pod.Labels[api.LabelGPUGroup]; ok && g != "" && !seen[g] {
		return append([]string{g}, multi...)
	}
	return multi
}
