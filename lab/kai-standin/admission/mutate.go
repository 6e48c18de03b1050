// Package admission is the stand-in for KAI's pod admission webhook: the gpusharing,
// deviceaccess and runtimeenforcement plugins, in KAI's order.
package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
)

// Options mirror the admission flags.
type Options struct {
	SchedulerName             string
	GPUSharingEnabled         bool
	BlockNvidiaVisibleDevices bool
	RuntimeClassName          string
}

// Plugins runs mutation and validation. Random7 is swappable so tests can pin the
// generated ConfigMap prefix.
type Plugins struct {
	Options
	Random7 func() string
}

func NewPlugins(o Options) *Plugins {
	return &Plugins{Options: o, Random7: func() string { return utilrand.String(7) }}
}

// Mutate changes pod in place. A pod for another scheduler is left untouched.
func (p *Plugins) Mutate(pod *corev1.Pod, requestNamespace string) error {
	if pod.Spec.SchedulerName != p.SchedulerName {
		return nil
	}
	if pod.Namespace == "" {
		pod.Namespace = requestNamespace
	} else if requestNamespace != "" && pod.Namespace != requestNamespace {
		return fmt.Errorf("error: the namespace from the provided object %s does not match the namespace %s", pod.Namespace, requestNamespace)
	}
	if err := p.mutateGPUSharing(pod); err != nil {
		return err
	}
	if p.BlockNvidiaVisibleDevices {
		blockVisibleDevices(pod)
	}
	if p.RuntimeClassName != "" {
		p.enforceRuntimeClass(pod)
	}
	return nil
}

// mutateGPUSharing runs even with sharing disabled: validation is where a disabled
// cluster rejects the pod.
func (p *Plugins) mutateGPUSharing(pod *corev1.Pod) error {
	if len(pod.Spec.Containers) == 0 || !gpushare.RequestsFraction(pod) {
		return nil
	}
	ref, err := gpushare.FractionContainer(pod)
	if err != nil {
		return fmt.Errorf("failed to get fraction container ref: %w", err)
	}
	prefix, ok := pod.Annotations[api.AnnSharedGPUConfigMap]
	if !ok {
		prefix = gpushare.GeneratePrefix(pod, ref, p.Random7())
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[api.AnnSharedGPUConfigMap] = prefix
	}
	capName := gpushare.CapabilitiesName(prefix, ref)
	c := ref.Container(pod)
	for _, name := range gpushare.CapabilityEnvOrder {
		setEnv(c, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: capName},
				Key:                  name,
			},
		}})
	}
	setVolume(pod, corev1.Volume{
		Name: gpushare.VolumeName(capName),
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: capName},
		}},
	})
	addEnvFrom(c, gpushare.EnvConfigMapName(capName))
	return nil
}

// setEnv drops any variable of the same name and appends the new one, so the three
// capability variables always end the list in a fixed order.
func setEnv(c *corev1.Container, v corev1.EnvVar) {
	kept := c.Env[:0:0]
	for _, e := range c.Env {
		if e.Name != v.Name {
			kept = append(kept, e)
		}
	}
	c.Env = append(kept, v)
}

func setVolume(pod *corev1.Pod, v corev1.Volume) {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == v.Name {
			pod.Spec.Volumes[i] = v
			return
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v)
}

func addEnvFrom(c *corev1.Container, cm string) {
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil && e.ConfigMapRef.Name == cm {
			return
		}
	}
	optional := false
	c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm},
		Optional:             &optional,
	}})
}

func (p *Plugins) enforceRuntimeClass(pod *corev1.Pod) {
	if !gpushare.RequestsFraction(pod) {
		return
	}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		name := p.RuntimeClassName
		pod.Spec.RuntimeClassName = &name
	}
}

// requestsDevice: a whole GPU or a MIG slice gives the container its own devices.
func requestsDevice(c *corev1.Container) bool {
	for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name := range rl {
			if name == api.ResourceGPU || strings.HasPrefix(string(name), "nvidia.com/mig-") {
				return true
			}
		}
	}
	return false
}

// unguardedContainers are the ones deviceaccess polices: neither the fraction container
// nor one with its own GPU devices.
func unguardedContainers(pod *corev1.Pod) []*corev1.Container {
	var frac *corev1.Container
	if gpushare.RequestsFraction(pod) && len(pod.Spec.Containers) > 0 {
		if ref, err := gpushare.FractionContainer(pod); err == nil {
			frac = ref.Container(pod)
		}
	}
	var out []*corev1.Container
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			if c != frac && !requestsDevice(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// blockVisibleDevices adds `void` only where the container sets nothing itself, so that
// a container's own value is left for validation to judge.
func blockVisibleDevices(pod *corev1.Pod) {
	for _, c := range unguardedContainers(pod) {
		found := false
		for _, e := range c.Env {
			if e.Name == gpushare.EnvVisibleDevices {
				found = true
				break
			}
		}
		if !found {
			c.Env = append(c.Env, corev1.EnvVar{Name: gpushare.EnvVisibleDevices, Value: "void"})
		}
	}
}
