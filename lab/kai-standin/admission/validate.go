package admission

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
)

// Validate runs on CREATE and UPDATE. The first failing check wins, in KAI's order.
func (p *Plugins) Validate(pod *corev1.Pod) error {
	if pod.Spec.SchedulerName != p.SchedulerName {
		return nil
	}
	if err := p.validateGPUSharing(pod); err != nil {
		return err
	}
	if p.BlockNvidiaVisibleDevices {
		return validateVisibleDevices(pod)
	}
	return nil
}

func positiveInt(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n > 0
}

func (p *Plugins) validateGPUSharing(pod *corev1.Pod) error {
	ann := pod.Annotations
	frac, hasFrac := ann[api.AnnGPUFraction]
	mem, hasMem := ann[api.AnnGPUMemory]
	numDevs, hasNumDevs := ann[api.AnnGPUFractionNumDevs]
	fraction := hasFrac || hasMem
	gpuLimit := gpushare.HasGPULimit(pod)

	if !p.GPUSharingEnabled && fraction {
		return fmt.Errorf("attempting to create a pod %s/%s with gpu sharing request, while GPU sharing is disabled", pod.Namespace, pod.Name)
	}
	if ann[api.AnnMPS] == "true" && !fraction {
		return errors.New("MPS is only supported with GPU fraction request")
	}
	if hasFrac && gpuLimit {
		return errors.New("cannot have both GPU fraction request and whole GPU resource request/limit")
	}
	if hasMem && (hasFrac || gpuLimit) {
		return errors.New("cannot request both GPU and GPU memory")
	}
	if hasNumDevs && !fraction {
		return errors.New("cannot request multiple fractional devices without specifying fraction portion or gpu-memory")
	}
	if hasMem && !positiveInt(mem) {
		return errors.New("gpu-memory annotation value must be a positive integer greater than 0")
	}
	if hasFrac {
		f, err := strconv.ParseFloat(frac, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f >= 1 {
			return errors.New("gpu-fraction annotation value must be a positive number smaller than 1.0")
		}
		if _, err := resource.ParseQuantity(frac); err != nil {
			return fmt.Errorf("gpu-fraction annotation value must be a float written with a decimal point or a scientific notation .given value: %s", frac)
		}
	}
	if hasNumDevs && !positiveInt(numDevs) {
		return errors.New("fraction count annotation value must be a positive integer greater than 0")
	}
	return nil
}

// The deviceaccess messages are ours: the contract names where KAI's live but not
// their text (CONTRACT.md).
func validateVisibleDevices(pod *corev1.Pod) error {
	for _, c := range unguardedContainers(pod) {
		for _, e := range c.Env {
			if e.Name != gpushare.EnvVisibleDevices {
				continue
			}
			if e.ValueFrom != nil {
				return fmt.Errorf("container %s may not take %s from valueFrom without a GPU request", c.Name, gpushare.EnvVisibleDevices)
			}
			if e.Value != "void" && e.Value != "none" {
				return fmt.Errorf("container %s may set %s only to void or none without a GPU request, got %q", c.Name, gpushare.EnvVisibleDevices, e.Value)
			}
		}
	}
	return nil
}
