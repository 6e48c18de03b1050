package api

// Label and annotation keys shared by several components. Their values are KAI's:
// other actors (the collection, fake GPU tooling, users) read and write them.
const (
	AnnGPUFraction          = "gpu-fraction"
	AnnGPUMemory            = "gpu-memory"
	AnnGPUFractionNumDevs   = "gpu-fraction-num-devices"
	AnnFractionContainer    = "gpu-fraction-container-name"
	AnnSharedGPUConfigMap   = "runai/shared-gpu-configmap"
	AnnMPS                  = "mps"
	AnnPodGroupName         = "pod-group-name"
	AnnReceivedResourceType = "received-resource-type"
	AnnNUMAPredicted        = "kai.scheduler/numa-placement-predicted"
	AnnTopOwnerMetadata     = "kai.scheduler/top-owner-metadata"
	AnnSkipPodGrouper       = "kai.scheduler/skip-podgrouper"
	AnnLastStartTimestamp   = "kai.scheduler/last-start-timestamp"
	AnnReserveForGPUIndex   = "run.ai/reserve_for_gpu_index"
	AnnDoNotDisrupt         = "karpenter.sh/do-not-disrupt"

	LabelGPUGroup       = "runai-gpu-group"
	LabelSelectedNode   = "selected-node"
	LabelPreemptibility = "kai.scheduler/preemptibility"
	LabelPriorityClass  = "priorityClassName"

	ResourceGPU       = "nvidia.com/gpu"
	NodeLabelGPUMemMB = "nvidia.com/gpu.memory"

	DefaultQueue         = "default-queue"
	DefaultPriorityClass = "train"
	DefaultNodePool      = "default"

	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"

	ResourceTypeFraction = "Fraction"
	ResourceTypeRegular  = "Regular"

	// SchedulingCondition type and reasons on a PodGroup: the condition's reason is always
	// Unschedulable, the specific one is in its reasons[] and its message's prefix.
	CondUnschedulableOnNodePool = "UnschedulableOnNodePool"
	ReasonUnschedulable         = "Unschedulable"
	ReasonQueueDoesNotExist     = "QueueDoesNotExist"
	ReasonOverLimit             = "OverLimit"
	// ReasonPodSchedulingErrors is KAI's reason when pods found no node, a gang's
	// "Resources were found for N pods while M are required for gang scheduling" among them.
	ReasonPodSchedulingErrors = "PodSchedulingErrors"
)
