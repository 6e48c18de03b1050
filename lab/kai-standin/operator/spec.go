// Package operator is the stand-in for KAI's operator (kai-contract.md §1, §14): it
// reconciles Config kai-config (kai.scheduler/v1) and the SchedulingShards into KAI's
// component Deployments, their Services, the admission webhook's serving certificate
// and webhook registrations, every one owned by kai-config. The component image tags
// come from kai-config's spec, never from the operator's own MS_TAG (only a fallback),
// so a helm rollback that takes the operator back leaves the components where
// kai-config says, as on KAI.
package operator

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ConfigName is the only Config the operator reconciles (KAI's singleton).
const ConfigName = "kai-config"

// Image is KAI's image reference shape in the Config spec: <repository>/<name>:<tag>.
type Image struct {
	Repository string `json:"repository,omitempty"`
	Name       string `json:"name,omitempty"`
	Tag        string `json:"tag,omitempty"`
	PullPolicy string `json:"pullPolicy,omitempty"`
}

// Service is an operand's deployment settings (KAI's `service` block).
type Service struct {
	Image     Image                        `json:"image,omitempty"`
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

type Global struct {
	SchedulerName    string `json:"schedulerName,omitempty"`
	QueueLabelKey    string `json:"queueLabelKey,omitempty"`
	NodePoolLabelKey string `json:"nodePoolLabelKey,omitempty"`
}

type Webhook struct {
	Port        int `json:"port,omitempty"`
	TargetPort  int `json:"targetPort,omitempty"`
	ProbePort   int `json:"probePort,omitempty"`
	MetricsPort int `json:"metricsPort,omitempty"`
}

type Admission struct {
	Service                            Service `json:"service,omitempty"`
	GPUSharing                         bool    `json:"gpuSharing,omitempty"`
	BlockNvidiaVisibleDevices          bool    `json:"blockNvidiaVisibleDevices,omitempty"`
	GPUFractionRuntimeClassName        string  `json:"gpuFractionRuntimeClassName,omitempty"`
	MutatingWebhookConfigurationName   string  `json:"mutatingWebhookConfigurationName,omitempty"`
	ValidatingWebhookConfigurationName string  `json:"validatingWebhookConfigurationName,omitempty"`
	Webhook                            Webhook `json:"webhook,omitempty"`
}

type ResourceReservation struct {
	Image              Image  `json:"image,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	AppLabel           string `json:"appLabel,omitempty"`
	AllocationTimeout  int    `json:"allocationTimeout,omitempty"`
}

type Binder struct {
	Service                 Service             `json:"service,omitempty"`
	MaxConcurrentReconciles int                 `json:"maxConcurrentReconciles,omitempty"`
	ResourceReservation     ResourceReservation `json:"resourceReservation,omitempty"`
}

type Operand struct {
	Service Service `json:"service,omitempty"`
}

// PortMapping is KAI's Service port shape: name, port, the container port behind it.
type PortMapping struct {
	Name       string `json:"name,omitempty"`
	Port       int    `json:"port,omitempty"`
	TargetPort int    `json:"targetPort,omitempty"`
}

// ControllerService is the Service in front of the podgroup-controller or the
// queue-controller: the webhook port, and the queue-controller's metrics port.
type ControllerService struct {
	Webhook PortMapping `json:"webhook,omitempty"`
	Metrics PortMapping `json:"metrics,omitempty"`
}

// ControllerWebhooks is KAI's `webhooks` block of those two operands: whether the operator
// registers the validating webhook, and the prefix of its configuration's name (the API
// version validated is appended).
type ControllerWebhooks struct {
	EnableValidation               *bool  `json:"enableValidation,omitempty"`
	WebhookConfigurationNamePrefix string `json:"webhookConfigurationNamePrefix,omitempty"`
}

// Controller is the podgroup-controller's or the queue-controller's part of the spec.
type Controller struct {
	Service           Service            `json:"service,omitempty"`
	ControllerService ControllerService  `json:"controllerService,omitempty"`
	Webhooks          ControllerWebhooks `json:"webhooks,omitempty"`
}

func (c *Controller) defaults(prefix string) {
	w := &c.ControllerService.Webhook
	w.Name = or(w.Name, "webhook")
	w.Port = or(w.Port, 443)
	w.TargetPort = or(w.TargetPort, 9443)
	m := &c.ControllerService.Metrics
	m.Name = or(m.Name, "metrics")
	m.Port = or(m.Port, 8080)
	m.TargetPort = or(m.TargetPort, 8080)
	if c.Webhooks.EnableValidation == nil {
		c.Webhooks.EnableValidation = ptr.To(true)
	}
	c.Webhooks.WebhookConfigurationNamePrefix = or(c.Webhooks.WebhookConfigurationNamePrefix, prefix)
}

// Standin holds what only the stand-in needs, in the Config so that it travels with the
// component tags: which release the components play, the binder's ConfigMap-write
// behaviour for it (meta/kai_releases.yml), the lab's build id and timings.
type Standin struct {
	Release              string                       `json:"release,omitempty"`
	ConfigmapWrite       string                       `json:"configmapWrite,omitempty"`
	Build                string                       `json:"build,omitempty"`
	FakeGPUNodes         bool                         `json:"fakeGpuNodes,omitempty"`
	SchedulePeriod       string                       `json:"schedulePeriod,omitempty"`
	RateLimiterBaseDelay int                          `json:"rateLimiterBaseDelay,omitempty"`
	RateLimiterMaxDelay  int                          `json:"rateLimiterMaxDelay,omitempty"`
	Resources            *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Faults are the KAI issues the components play on purpose (the chart's
	// standin.faults): every component gets them as --standin-faults and acts on its own.
	Faults []string `json:"faults,omitempty"`
}

// Spec is the part of kai-config's spec the stand-in reads (field names as KAI's).
type Spec struct {
	Namespace          string     `json:"namespace,omitempty"`
	Global             Global     `json:"global,omitempty"`
	Admission          Admission  `json:"admission,omitempty"`
	Binder             Binder     `json:"binder,omitempty"`
	Scheduler          Operand    `json:"scheduler,omitempty"`
	PodGrouper         Operand    `json:"podGrouper,omitempty"`
	PodGroupController Controller `json:"podGroupController,omitempty"`
	QueueController    Controller `json:"queueController,omitempty"`
	Standin            Standin    `json:"standin,omitempty"`
}

// Fallbacks are the operator's own settings: its namespace and MS_REPOSITORY/MS_TAG,
// used only where the Config leaves a field empty.
type Fallbacks struct {
	Namespace  string
	Repository string
	Tag        string
}

// ParseSpec reads a Config's spec and fills KAI's defaults.
func ParseSpec(raw []byte, fb Fallbacks) (Spec, error) {
	var s Spec
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return s, fmt.Errorf("failed to read Config %s spec: %w", ConfigName, err)
		}
	}
	s.defaults(fb)
	return s, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (s *Spec) defaults(fb Fallbacks) {
	s.Namespace = or(s.Namespace, or(fb.Namespace, "kai-scheduler"))
	g := &s.Global
	g.SchedulerName = or(g.SchedulerName, "kai-scheduler")
	g.QueueLabelKey = or(g.QueueLabelKey, "kai.scheduler/queue")
	g.NodePoolLabelKey = or(g.NodePoolLabelKey, "kai.scheduler/node-pool")
	a := &s.Admission
	a.GPUFractionRuntimeClassName = or(a.GPUFractionRuntimeClassName, "nvidia")
	a.MutatingWebhookConfigurationName = or(a.MutatingWebhookConfigurationName, "mutating-kai-admission")
	a.ValidatingWebhookConfigurationName = or(a.ValidatingWebhookConfigurationName, "validating-kai-admission")
	a.Webhook.Port = or(a.Webhook.Port, 443)
	a.Webhook.TargetPort = or(a.Webhook.TargetPort, 9443)
	a.Webhook.ProbePort = or(a.Webhook.ProbePort, 8081)
	a.Webhook.MetricsPort = or(a.Webhook.MetricsPort, 8080)
	b := &s.Binder
	b.MaxConcurrentReconciles = or(b.MaxConcurrentReconciles, 10)
	rr := &b.ResourceReservation
	rr.Namespace = or(rr.Namespace, "kai-resource-reservation")
	rr.ServiceAccountName = or(rr.ServiceAccountName, "kai-resource-reservation")
	rr.AppLabel = or(rr.AppLabel, "kai-resource-reservation")
	rr.AllocationTimeout = or(rr.AllocationTimeout, 40)
	s.PodGroupController.defaults("kai-podgroup-validation-")
	s.QueueController.defaults("kai-queue-validation-")
	st := &s.Standin
	st.Release = or(st.Release, "unknown")
	st.SchedulePeriod = or(st.SchedulePeriod, "1s")
	st.RateLimiterBaseDelay = or(st.RateLimiterBaseDelay, 1)
	st.RateLimiterMaxDelay = or(st.RateLimiterMaxDelay, 60)
	for _, img := range []*Image{
		&a.Service.Image, &b.Service.Image, &rr.Image, &s.Scheduler.Service.Image,
		&s.PodGrouper.Service.Image, &s.PodGroupController.Service.Image, &s.QueueController.Service.Image,
	} {
		img.Repository = or(img.Repository, fb.Repository)
		img.Tag = or(img.Tag, fb.Tag)
		img.PullPolicy = or(img.PullPolicy, string(corev1.PullIfNotPresent))
	}
	a.Service.Image.Name = or(a.Service.Image.Name, "admission")
	b.Service.Image.Name = or(b.Service.Image.Name, "binder")
	rr.Image.Name = or(rr.Image.Name, "resourcereservation")
	s.Scheduler.Service.Image.Name = or(s.Scheduler.Service.Image.Name, "scheduler")
	s.PodGrouper.Service.Image.Name = or(s.PodGrouper.Service.Image.Name, "podgrouper")
	s.PodGroupController.Service.Image.Name = or(s.PodGroupController.Service.Image.Name, "podgroupcontroller")
	s.QueueController.Service.Image.Name = or(s.QueueController.Service.Image.Name, "queuecontroller")
}

// Ref is the image reference <repository>/<name>:<tag>.
func (i Image) Ref() string {
	ref := i.Name
	if i.Repository != "" {
		ref = i.Repository + "/" + ref
	}
	if i.Tag != "" {
		ref += ":" + i.Tag
	}
	return ref
}
