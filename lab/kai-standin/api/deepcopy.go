package api

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Hand-written instead of generated: the types are few and small, and the module stays
// free of code generators.

func copyResources(in corev1.ResourceList) corev1.ResourceList {
	if in == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for k, v := range in {
		out[k] = v.DeepCopy()
	}
	return out
}

func copyExplanations(in []UnschedulableExplanation) []UnschedulableExplanation {
	if in == nil {
		return nil
	}
	out := make([]UnschedulableExplanation, len(in))
	for i, e := range in {
		out[i] = UnschedulableExplanation{Reason: e.Reason, Message: e.Message}
		if e.Details == nil {
			continue
		}
		out[i].Details = &UnschedulableExplanationDetails{}
		if q := e.Details.QueueDetails; q != nil {
			out[i].Details.QueueDetails = &QuotaDetails{
				Name:                                     q.Name,
				QueueRequestedResources:                  copyResources(q.QueueRequestedResources),
				QueueDeservedResources:                   copyResources(q.QueueDeservedResources),
				QueueAllocatedNonPreemptibleResources:    copyResources(q.QueueAllocatedNonPreemptibleResources),
				PodGroupRequestedResources:               copyResources(q.PodGroupRequestedResources),
				PodGroupRequestedNonPreemptibleResources: copyResources(q.PodGroupRequestedNonPreemptibleResources),
				QueueAllocatedResources:                  copyResources(q.QueueAllocatedResources),
				QueueResourceLimits:                      copyResources(q.QueueResourceLimits),
			}
		}
	}
	return out
}

func copyFloat(in *float64) *float64 {
	if in == nil {
		return nil
	}
	v := *in
	return &v
}

func (in *BindRequest) DeepCopyInto(out *BindRequest) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	if in.Spec.ReceivedGPU != nil {
		g := *in.Spec.ReceivedGPU
		out.Spec.ReceivedGPU = &g
	}
	if in.Spec.SelectedGPUGroups != nil {
		out.Spec.SelectedGPUGroups = append([]string(nil), in.Spec.SelectedGPUGroups...)
	}
	if in.Spec.PredictedNUMAZones != nil {
		out.Spec.PredictedNUMAZones = make([]NUMAZone, len(in.Spec.PredictedNUMAZones))
		for i, z := range in.Spec.PredictedNUMAZones {
			out.Spec.PredictedNUMAZones[i] = NUMAZone{Zone: z.Zone, Amount: copyResources(z.Amount)}
		}
	}
	if in.Spec.BackoffLimit != nil {
		b := *in.Spec.BackoffLimit
		out.Spec.BackoffLimit = &b
	}
}

func (in *BindRequest) DeepCopy() *BindRequest {
	if in == nil {
		return nil
	}
	out := new(BindRequest)
	in.DeepCopyInto(out)
	return out
}

func (in *BindRequest) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *BindRequestList) DeepCopyObject() runtime.Object {
	out := &BindRequestList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]BindRequest, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

func (in *PodGroup) DeepCopyInto(out *PodGroup) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Spec.MinMember != nil {
		m := *in.Spec.MinMember
		out.Spec.MinMember = &m
	}
	if in.Status.SchedulingConditions != nil {
		out.Status.SchedulingConditions = make([]SchedulingCondition, len(in.Status.SchedulingConditions))
		for i, c := range in.Status.SchedulingConditions {
			out.Status.SchedulingConditions[i] = c
			c.LastTransitionTime.DeepCopyInto(&out.Status.SchedulingConditions[i].LastTransitionTime)
			out.Status.SchedulingConditions[i].Reasons = copyExplanations(c.Reasons)
		}
	}
	out.Status.ResourcesStatus = ResourcesStatus{
		Allocated:               copyResources(in.Status.ResourcesStatus.Allocated),
		AllocatedNonPreemptible: copyResources(in.Status.ResourcesStatus.AllocatedNonPreemptible),
		Requested:               copyResources(in.Status.ResourcesStatus.Requested),
	}
}

func (in *PodGroup) DeepCopy() *PodGroup {
	if in == nil {
		return nil
	}
	out := new(PodGroup)
	in.DeepCopyInto(out)
	return out
}

func (in *PodGroup) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *PodGroupList) DeepCopyObject() runtime.Object {
	out := &PodGroupList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]PodGroup, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

func copyQuota(in *ResourceQuota) *ResourceQuota {
	if in == nil {
		return nil
	}
	return &ResourceQuota{Quota: copyFloat(in.Quota), OverQuotaWeight: copyFloat(in.OverQuotaWeight), Limit: copyFloat(in.Limit)}
}

func (in *Queue) DeepCopyInto(out *Queue) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Spec.Resources != nil {
		out.Spec.Resources = &QueueResources{
			GPU:    copyQuota(in.Spec.Resources.GPU),
			CPU:    copyQuota(in.Spec.Resources.CPU),
			Memory: copyQuota(in.Spec.Resources.Memory),
		}
	}
	if in.Spec.Priority != nil {
		p := *in.Spec.Priority
		out.Spec.Priority = &p
	}
	if in.Status.ChildQueues != nil {
		out.Status.ChildQueues = append([]string(nil), in.Status.ChildQueues...)
	}
	out.Status.Allocated = copyResources(in.Status.Allocated)
	out.Status.AllocatedNonPreemptible = copyResources(in.Status.AllocatedNonPreemptible)
	out.Status.Requested = copyResources(in.Status.Requested)
}

func (in *Queue) DeepCopy() *Queue {
	if in == nil {
		return nil
	}
	out := new(Queue)
	in.DeepCopyInto(out)
	return out
}

func (in *Queue) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *QueueList) DeepCopyObject() runtime.Object {
	out := &QueueList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Queue, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

func (in *Config) DeepCopyInto(out *Config) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
}

func (in *Config) DeepCopyObject() runtime.Object {
	out := new(Config)
	in.DeepCopyInto(out)
	return out
}

func (in *ConfigList) DeepCopyObject() runtime.Object {
	out := &ConfigList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Config, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
