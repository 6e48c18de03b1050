package api

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BindRequest is scheduling.run.ai/v1alpha2 BindRequest (namespaced, status subresource).
type BindRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BindRequestSpec   `json:"spec,omitempty"`
	Status            BindRequestStatus `json:"status,omitempty"`
}

type BindRequestSpec struct {
	PodName              string       `json:"podName,omitempty"`
	SelectedNode         string       `json:"selectedNode,omitempty"`
	ReceivedResourceType string       `json:"receivedResourceType,omitempty"`
	ReceivedGPU          *ReceivedGPU `json:"receivedGPU,omitempty"`
	SelectedGPUGroups    []string     `json:"selectedGPUGroups,omitempty"`
	PredictedNUMAZones   []NUMAZone   `json:"predictedNUMAZones,omitempty"`
	BackoffLimit         *int32       `json:"backoffLimit,omitempty"`
}

type ReceivedGPU struct {
	Count   int    `json:"count,omitempty"`
	Portion string `json:"portion,omitempty"`
}

type NUMAZone struct {
	Zone   string              `json:"zone,omitempty"`
	Amount corev1.ResourceList `json:"amount,omitempty"`
}

type BindRequestStatus struct {
	Phase          string `json:"phase,omitempty"`
	Reason         string `json:"reason,omitempty"`
	FailedAttempts int32  `json:"failedAttempts,omitempty"`
}

type BindRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindRequest `json:"items"`
}

// PodGroup is scheduling.run.ai/v2alpha2 PodGroup (namespaced, status subresource).
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodGroupSpec   `json:"spec,omitempty"`
	Status            PodGroupStatus `json:"status,omitempty"`
}

type PodGroupSpec struct {
	MinMember         *int32 `json:"minMember,omitempty"`
	Queue             string `json:"queue,omitempty"`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	Preemptibility    string `json:"preemptibility,omitempty"`
	// Not omitempty: KAI's pod grouper writes `topologyConstraint: {}` on every PodGroup.
	TopologyConstraint TopologyConstraint `json:"topologyConstraint"`
}

type TopologyConstraint struct {
	PreferredTopologyLevel string `json:"preferredTopologyLevel,omitempty"`
	RequiredTopologyLevel  string `json:"requiredTopologyLevel,omitempty"`
	Topology               string `json:"topology,omitempty"`
}

type PodGroupStatus struct {
	SchedulingConditions []SchedulingCondition `json:"schedulingConditions,omitempty"`
	ResourcesStatus      ResourcesStatus       `json:"resourcesStatus,omitempty"`
}

type SchedulingCondition struct {
	Type               string                 `json:"type"`
	NodePool           string                 `json:"nodePool,omitempty"`
	Reason             string                 `json:"reason,omitempty"`
	Message            string                 `json:"message,omitempty"`
	TransitionID       string                 `json:"transitionID,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime,omitempty"`
	Status             corev1.ConditionStatus `json:"status,omitempty"`
	// Reasons: the specific reasons (QueueDoesNotExist, OverLimit); Reason is always
	// Unschedulable and Message starts with "<reason>: ".
	Reasons []UnschedulableExplanation `json:"reasons,omitempty"`
}

type UnschedulableExplanation struct {
	Reason  string                           `json:"reason,omitempty"`
	Message string                           `json:"message,omitempty"`
	Details *UnschedulableExplanationDetails `json:"details,omitempty"`
}

type UnschedulableExplanationDetails struct {
	QueueDetails *QuotaDetails `json:"queueDetails,omitempty"`
}

// QuotaDetails: the queue's figures when a pod group was held back (GPUs only here).
type QuotaDetails struct {
	Name                                     string              `json:"name,omitempty"`
	QueueRequestedResources                  corev1.ResourceList `json:"queueRequestedResources,omitempty"`
	QueueDeservedResources                   corev1.ResourceList `json:"queueDeservedResources,omitempty"`
	QueueAllocatedNonPreemptibleResources    corev1.ResourceList `json:"queueAllocatedNonPreemptibleResources,omitempty"`
	PodGroupRequestedResources               corev1.ResourceList `json:"podGroupRequestedResources,omitempty"`
	PodGroupRequestedNonPreemptibleResources corev1.ResourceList `json:"podGroupRequestedNonPreemptibleResources,omitempty"`
	QueueAllocatedResources                  corev1.ResourceList `json:"queueAllocatedResources,omitempty"`
	QueueResourceLimits                      corev1.ResourceList `json:"queueResourceLimits,omitempty"`
}

type ResourcesStatus struct {
	Allocated               corev1.ResourceList `json:"allocated,omitempty"`
	AllocatedNonPreemptible corev1.ResourceList `json:"allocatedNonPreemptible,omitempty"`
	Requested               corev1.ResourceList `json:"requested,omitempty"`
}

type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// Queue is scheduling.run.ai/v2 Queue (cluster-scoped).
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              QueueSpec   `json:"spec,omitempty"`
	Status            QueueStatus `json:"status,omitempty"`
}

type QueueSpec struct {
	DisplayName string          `json:"displayName,omitempty"`
	ParentQueue string          `json:"parentQueue,omitempty"`
	Resources   *QueueResources `json:"resources,omitempty"`
	Priority    *int            `json:"priority,omitempty"`
}

type QueueResources struct {
	GPU    *ResourceQuota `json:"gpu,omitempty"`
	CPU    *ResourceQuota `json:"cpu,omitempty"`
	Memory *ResourceQuota `json:"memory,omitempty"`
}

// ResourceQuota keeps Limit a pointer: an absent limit and -1 both mean unlimited.
type ResourceQuota struct {
	Quota           *float64 `json:"quota,omitempty"`
	OverQuotaWeight *float64 `json:"overQuotaWeight,omitempty"`
	Limit           *float64 `json:"limit,omitempty"`
}

type QueueStatus struct {
	ChildQueues             []string            `json:"childQueues,omitempty"`
	Allocated               corev1.ResourceList `json:"allocated,omitempty"`
	AllocatedNonPreemptible corev1.ResourceList `json:"allocatedNonPreemptible,omitempty"`
	Requested               corev1.ResourceList `json:"requested,omitempty"`
}

type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}

// Config is kai.scheduler/v1 Config (cluster-scoped). No stand-in component reconciles
// it (there is no operator); the type exists so tools can read kai-config typed.
type Config struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              runtime.RawExtension `json:"spec,omitempty"`
}

type ConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Config `json:"items"`
}
