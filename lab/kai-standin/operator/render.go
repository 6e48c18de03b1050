package operator

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kaiops.dev/lab/kai-standin/admission"
	"kaiops.dev/lab/kai-standin/podgroupctl"
	"kaiops.dev/lab/kai-standin/queuectl"
)

// Labels and names the operator writes.
const (
	ManagedByLabel      = "app.kubernetes.io/managed-by"
	ManagedBy           = "kai-operator"
	ImplementationLabel = "kaiops.dev/kai-implementation"
	ReleaseKey          = "kaiops.dev/kai-standin-release"
	BuildAnnotation     = "kaiops.dev/kai-standin-build"
	CertAnnotation      = "kaiops.dev/serving-cert"
	WebhookSecret       = "kai-admission-webhook-tls-secret"
	PodGroupSecret      = "podgroup-webhook-tls-secret"
	QueueSecret         = "queue-webhook-tls-secret"
	certDir             = "/tmp/k8s-webhook-server/serving-certs"
)

// The API versions KAI's operator registers a validating webhook for, one configuration
// each, and the webhooks' names and paths (the paths controller-runtime derives from
// group, version and kind; the packages that serve them hold them).
const (
	PodGroupVersion     = "v2alpha2"
	QueueVersion        = "v2"
	PodGroupWebhookName = "podgroup-validation.kai.scheduler"
	QueueWebhookName    = "queue-validation.kai.scheduler"
	PodGroupPath        = podgroupctl.WebhookPath
	QueuePath           = queuectl.WebhookPath
	TopologyPath        = admission.TopologyPath
)

// WebhookService is a Service that serves webhooks and the Secret that keeps its
// serving certificate, as KAI's operator names them.
type WebhookService struct{ Service, Secret string }

// WebhookServices are the three: admission (pods, topologies), podgroup-controller,
// queue-controller.
var WebhookServices = []WebhookService{
	{"admission", WebhookSecret}, {"podgroup-controller", PodGroupSecret}, {"queue-controller", QueueSecret},
}

// Cert is what rendering needs of one Service's serving certificate.
type Cert struct {
	// CABundle: the CA the webhook registrations trust.
	CABundle []byte
	// Hash names the certificate in the serving pod's template.
	Hash string
}

// Shard is a SchedulingShard as the operator reads it: one scheduler per shard.
type Shard struct {
	Name                string
	PartitionLabelValue string
}

// Inputs is everything the rendering depends on besides the spec; rendering is pure.
type Inputs struct {
	Shards []Shard
	// FakeGPUNodes: some node carries run.ai/fake.gpu=true (KAI's operator then passes
	// --fake-gpu-nodes to the binder), or the spec forces it.
	FakeGPUNodes bool
	// Certs by Service name come from the serving-certificate Secrets the operator keeps.
	Certs map[string]Cert
	// Annotations copied onto every owned object (the Config's helm release annotations).
	Annotations map[string]string
}

// component is one Deployment as data: KAI's shape, name = app label = container = SA.
type component struct {
	name, standin string
	image         Image
	strategy      appsv1.DeploymentStrategyType
	args          []string
	ports         []corev1.ContainerPort
	readiness     *corev1.Probe
	resources     *corev1.ResourceRequirements
	mounts        []corev1.VolumeMount
	volumes       []corev1.Volume
	podAnnotation map[string]string
}

// SchedulerName is the Deployment (and Service) name of a shard's scheduler.
func SchedulerName(s Spec, shard string) string { return s.Global.SchedulerName + "-" + shard }

// DeploymentNames lists the Deployments the spec and shards call for, sorted.
func DeploymentNames(s Spec, shards []Shard) []string {
	names := []string{"admission", "binder", "pod-grouper", "podgroup-controller", "queue-controller"}
	for _, sh := range shards {
		names = append(names, SchedulerName(s, sh.Name))
	}
	sort.Strings(names)
	return names
}

// binderPlugins is the binder's plugin map, keys sorted as KAI's operator writes them.
func binderPlugins() string {
	type plugin struct {
		Enabled   bool              `json:"enabled"`
		Priority  int               `json:"priority"`
		Arguments map[string]string `json:"arguments"`
	}
	b, _ := json.Marshal(map[string]plugin{
		"dynamicresources": {true, 200, map[string]string{}},
		"gpusharing":       {true, 100, map[string]string{"cdiEnabled": "false"}},
		"hamicore":         {false, 50, map[string]string{}},
		"volumebinding":    {true, 300, map[string]string{}},
	})
	return string(b)
}

func (s Spec) components(in Inputs) []component {
	g, a, b := s.Global, s.Admission, s.Binder
	rr := b.ResourceReservation
	metrics := []corev1.ContainerPort{{Name: "http-metrics", ContainerPort: 8080}}

	binderArgs := []string{
		"--scheduler-name", g.SchedulerName,
		"--resource-reservation-namespace", rr.Namespace,
		"--resource-reservation-service-account", rr.ServiceAccountName,
		"--resource-reservation-app-label", rr.AppLabel,
		"--resource-reservation-pod-image", rr.Image.Ref(),
		"--scale-adjust-namespace", "kai-scale-adjust",
		"--health-probe-bind-address", ":8081",
		"--metrics-bind-address", ":8080",
		fmt.Sprintf("--max-concurrent-reconciles=%d", b.MaxConcurrentReconciles),
		fmt.Sprintf("--resource-reservation-allocation-timeout=%d", rr.AllocationTimeout),
		"--plugins", binderPlugins(),
	}
	if in.FakeGPUNodes || s.Standin.FakeGPUNodes {
		binderArgs = append(binderArgs, "--fake-gpu-nodes")
	}
	binderArgs = append(binderArgs, "--qps", "50", "--burst", "300", "--zap-devel=false",
		fmt.Sprintf("--rate-limiter-base-delay=%d", s.Standin.RateLimiterBaseDelay),
		fmt.Sprintf("--rate-limiter-max-delay=%d", s.Standin.RateLimiterMaxDelay))
	if s.Standin.ConfigmapWrite != "" {
		binderArgs = append(binderArgs, "--standin-configmap-write="+s.Standin.ConfigmapWrite)
	}

	admArgs := []string{
		"--scheduler-name", g.SchedulerName,
		"--webhook-addr", fmt.Sprint(a.Webhook.TargetPort),
		"--health-probe-bind-address", fmt.Sprintf(":%d", a.Webhook.ProbePort),
		"--metrics-bind-address", fmt.Sprintf(":%d", a.Webhook.MetricsPort),
	}
	if a.GPUSharing {
		admArgs = append(admArgs, "--gpu-sharing-enabled=true")
	}
	if a.BlockNvidiaVisibleDevices {
		admArgs = append(admArgs, "--block-nvidia-visible-devices=true")
	}
	admArgs = append(admArgs, "--gpu-fraction-runtime-class-name", a.GPUFractionRuntimeClassName,
		"--qps", "50", "--burst", "300", "--zap-devel=false", "--cert-dir", certDir)

	out := []component{
		{
			name: "admission", standin: "admission", image: a.Service.Image, strategy: appsv1.RecreateDeploymentStrategyType,
			args: admArgs,
			ports: []corev1.ContainerPort{
				{Name: "webhook", ContainerPort: int32(a.Webhook.TargetPort)},
				{Name: "http-metrics", ContainerPort: int32(a.Webhook.MetricsPort)},
			},
			readiness: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(int32(a.Webhook.ProbePort))}},
				PeriodSeconds: 1,
			},
			resources:     a.Service.Resources,
			mounts:        certMount(),
			volumes:       certVolume(WebhookSecret),
			podAnnotation: map[string]string{CertAnnotation: in.Certs["admission"].Hash},
		},
		{
			name: "binder", standin: "binder", image: b.Service.Image, strategy: appsv1.RecreateDeploymentStrategyType,
			args: binderArgs, ports: metrics, resources: b.Service.Resources,
		},
		{
			name: "pod-grouper", standin: "pod-grouper", image: s.PodGrouper.Service.Image,
			args:      []string{"--scheduler-name", g.SchedulerName, "--queue-label-key", g.QueueLabelKey, "--zap-devel=false"},
			resources: s.PodGrouper.Service.Resources,
		},
		{
			name: "podgroup-controller", standin: "podgroup-controller", image: s.PodGroupController.Service.Image,
			args:      []string{"--scheduler-name", g.SchedulerName, "--zap-devel=false"},
			resources: s.PodGroupController.Service.Resources,
			// KAI's: no container port, no cert flag; the webhook server's defaults (9443,
			// <tmp>/k8s-webhook-server/serving-certs) meet the Secret mounted there
			mounts: certMount(), volumes: certVolume(PodGroupSecret),
			podAnnotation: map[string]string{CertAnnotation: in.Certs["podgroup-controller"].Hash},
		},
		{
			name: "queue-controller", standin: "queue-controller", image: s.QueueController.Service.Image,
			args: []string{
				"--metrics-listen-address", fmt.Sprintf(":%d", s.QueueController.ControllerService.Metrics.Port), "--zap-devel=false",
			},
			resources: s.QueueController.Service.Resources,
			mounts:    certMount(), volumes: certVolume(QueueSecret),
			podAnnotation: map[string]string{CertAnnotation: in.Certs["queue-controller"].Hash},
		},
	}
	for _, sh := range in.Shards {
		out = append(out, component{
			name: SchedulerName(s, sh.Name), standin: "scheduler", image: s.Scheduler.Service.Image,
			args: []string{
				"--scheduler-name=" + g.SchedulerName, "--namespace=" + s.Namespace,
				"--nodepool-label-key=" + g.NodePoolLabelKey, "--partition-label-value=" + sh.PartitionLabelValue,
				"--resource-reservation-app-label=" + rr.AppLabel, "--queue-label-key=" + g.QueueLabelKey,
				"--listen-address=:8080", "--schedule-period=" + s.Standin.SchedulePeriod,
			},
			ports: metrics, resources: s.Scheduler.Service.Resources,
		})
	}
	return out
}

func certMount() []corev1.VolumeMount {
	return []corev1.VolumeMount{{Name: "cert", MountPath: certDir, ReadOnly: true}}
}

func certVolume(secret string) []corev1.Volume {
	return []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
}

func (s Spec) labels(app string) map[string]string {
	l := map[string]string{
		ManagedByLabel:              ManagedBy,
		ImplementationLabel:         "standin",
		ReleaseKey:                  s.Standin.Release,
		"app.kubernetes.io/part-of": "kai-scheduler",
	}
	if app != "" {
		l["app"] = app
	}
	return l
}

func (s Spec) meta(name, namespace, app string, in Inputs) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: s.labels(app)}
	if len(in.Annotations) > 0 {
		m.Annotations = map[string]string{}
		for k, v := range in.Annotations {
			m.Annotations[k] = v
		}
	}
	return m
}

// standinArgs start every component's arguments: which component, the release it plays
// and, when any is on, the faults (sorted, each once; the component refuses an unknown).
func (s Spec) standinArgs(component string) []string {
	args := []string{component, "--standin-release=" + s.Standin.Release}
	if len(s.Standin.Faults) == 0 {
		return args
	}
	on := slices.Clone(s.Standin.Faults)
	slices.Sort(on)
	return append(args, "--standin-faults="+strings.Join(slices.Compact(on), ","))
}

func (s Spec) deployment(c component, in Inputs) *appsv1.Deployment {
	podAnn := map[string]string{ReleaseKey: s.Standin.Release}
	if s.Standin.Build != "" {
		podAnn[BuildAnnotation] = s.Standin.Build
	}
	for k, v := range c.podAnnotation {
		podAnn[k] = v
	}
	res := c.resources
	if res == nil {
		res = s.Standin.Resources
	}
	if res == nil {
		res = &corev1.ResourceRequirements{}
	}
	strategy := c.strategy
	if strategy == "" {
		strategy = appsv1.RollingUpdateDeploymentStrategyType
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.meta(c.name, s.Namespace, c.name, in),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Strategy: appsv1.DeploymentStrategy{Type: strategy},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": c.name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"app": c.name, ImplementationLabel: "standin"},
					Annotations: podAnn,
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:            c.name,
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Volumes:                       c.volumes,
					Containers: []corev1.Container{{
						Name:            c.name,
						Image:           c.image.Ref(),
						ImagePullPolicy: corev1.PullPolicy(c.image.PullPolicy),
						Args:            append(s.standinArgs(c.standin), c.args...),
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
						},
						Ports:          c.ports,
						ReadinessProbe: c.readiness,
						Resources:      *res,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							RunAsNonRoot:             ptr.To(true),
							RunAsUser:                ptr.To[int64](10000),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: c.mounts,
					}},
				},
			},
		},
	}
}

func (s Spec) service(name string, ports []corev1.ServicePort, headless bool, ann map[string]string, in Inputs) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: s.meta(name, s.Namespace, "", in),
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: ports},
	}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	for k, v := range ann {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[k] = v
	}
	return svc
}

// controllerService is the podgroup-controller's or queue-controller's Service as KAI's
// operator makes it: labelled `app`, the webhook port first.
func (s Spec) controllerService(name string, webhook PortMapping, in Inputs, more ...PortMapping) *corev1.Service {
	var ports []corev1.ServicePort
	for _, p := range append([]PortMapping{webhook}, more...) {
		ports = append(ports, corev1.ServicePort{
			Name: p.Name, Port: int32(p.Port), Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(p.TargetPort)),
		})
	}
	svc := s.service(name, ports, false, nil, in)
	svc.Labels["app"] = name
	return svc
}

// WebhookServiceHost is the admission Service's DNS name (also the webhooks' name).
func WebhookServiceHost(s Spec) string { return "admission." + s.Namespace + ".svc" }

// hookBase is what every webhook the operator registers has in common: admission review
// v1, no side effects, failurePolicy Fail, 10 s, the Service's port and the CA it trusts.
type hookBase struct {
	name   string
	cc     admissionv1.WebhookClientConfig
	fail   admissionv1.FailurePolicyType
	none   admissionv1.SideEffectClass
	review []string
}

func (s Spec) hook(name, service, path string, port int, in Inputs) hookBase {
	return hookBase{
		name: name, fail: admissionv1.Fail, none: admissionv1.SideEffectClassNone, review: []string{"v1"},
		cc: admissionv1.WebhookClientConfig{
			CABundle: in.Certs[service].CABundle,
			Service:  &admissionv1.ServiceReference{Name: service, Namespace: s.Namespace, Path: ptr.To(path), Port: ptr.To(int32(port))},
		},
	}
}

func (h hookBase) validating(rules []admissionv1.RuleWithOperations) admissionv1.ValidatingWebhook {
	return admissionv1.ValidatingWebhook{
		Name: h.name, AdmissionReviewVersions: h.review, ClientConfig: h.cc,
		FailurePolicy: &h.fail, SideEffects: &h.none, TimeoutSeconds: ptr.To[int32](10), Rules: rules,
	}
}

func rule(group, version, resource string, scope admissionv1.ScopeType, ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
	return []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{
		APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}, Scope: ptr.To(scope),
	}}}
}

func (s Spec) validatingConfig(name, app string, hooks []admissionv1.ValidatingWebhook, in Inputs) *admissionv1.ValidatingWebhookConfiguration {
	return &admissionv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: s.meta(name, "", app, in),
		Webhooks:   hooks,
	}
}

// webhooks are KAI's four configurations: the admission's pod webhooks (mutating and
// validating, the latter with the topology webhook), and one validating configuration
// each for the PodGroup and Queue versions KAI validates, unless the spec turns it off.
func (s Spec) webhooks(in Inputs) []client.Object {
	a := s.Admission
	selector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", s.Namespace},
	}}}
	match := []admissionv1.MatchCondition{{
		Name: "scheduler-name-match", Expression: fmt.Sprintf("object.spec.schedulerName == '%s'", s.Global.SchedulerName),
	}}
	host := WebhookServiceHost(s)
	mut := s.hook(host, "admission", admission.MutatePath, a.Webhook.Port, in)
	mutating := &admissionv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: s.meta(a.MutatingWebhookConfigurationName, "", "admission", in),
		Webhooks: []admissionv1.MutatingWebhook{{
			Name: mut.name, AdmissionReviewVersions: mut.review, ClientConfig: mut.cc,
			FailurePolicy: &mut.fail, SideEffects: &mut.none, TimeoutSeconds: ptr.To[int32](10),
			ReinvocationPolicy: ptr.To(admissionv1.IfNeededReinvocationPolicy),
			Rules:              rule("", "v1", "pods", admissionv1.NamespacedScope, admissionv1.Create),
			NamespaceSelector:  selector, MatchConditions: match,
		}},
	}
	pods := s.hook(host, "admission", admission.ValidatePath, a.Webhook.Port, in).
		validating(rule("", "v1", "pods", admissionv1.NamespacedScope, admissionv1.Create, admissionv1.Update))
	pods.NamespaceSelector, pods.MatchConditions = selector, match
	// topologies are cluster-scoped and no pods: neither the pod selectors nor the match
	// condition; registered whether or not the Topology CRD is installed, as KAI does
	topology := s.hook("topology."+host, "admission", TopologyPath, a.Webhook.Port, in).
		validating(rule("kai.scheduler", "v1alpha1", "topologies", admissionv1.ClusterScope, admissionv1.Create, admissionv1.Update))
	out := []client.Object{
		mutating,
		s.validatingConfig(a.ValidatingWebhookConfigurationName, "admission", []admissionv1.ValidatingWebhook{pods, topology}, in),
	}
	pg, q := s.PodGroupController, s.QueueController
	if *pg.Webhooks.EnableValidation {
		h := s.hook(PodGroupWebhookName, "podgroup-controller", PodGroupPath, pg.ControllerService.Webhook.Port, in).
			validating(rule("scheduling.run.ai", PodGroupVersion, "podgroups", admissionv1.NamespacedScope, admissionv1.Create, admissionv1.Update))
		out = append(out, s.validatingConfig(pg.Webhooks.WebhookConfigurationNamePrefix+PodGroupVersion, "podgroup-controller",
			[]admissionv1.ValidatingWebhook{h}, in))
	}
	if *q.Webhooks.EnableValidation {
		h := s.hook(QueueWebhookName, "queue-controller", QueuePath, q.ControllerService.Webhook.Port, in).
			validating(rule("scheduling.run.ai", QueueVersion, "queues", admissionv1.ClusterScope, admissionv1.Create, admissionv1.Update))
		out = append(out, s.validatingConfig(q.Webhooks.WebhookConfigurationNamePrefix+QueueVersion, "queue-controller",
			[]admissionv1.ValidatingWebhook{h}, in))
	}
	return out
}

// Render is the operator's whole desired state for one Config (the certificate Secret
// apart, which is kept, not rendered): Deployments, Services, webhook registrations.
func Render(s Spec, in Inputs) []client.Object {
	var out []client.Object
	for _, c := range s.components(in) {
		out = append(out, s.deployment(c, in))
	}
	a := s.Admission
	out = append(out,
		s.service("admission", []corev1.ServicePort{
			{Name: "webhook", Port: int32(a.Webhook.Port), TargetPort: intstr.FromInt32(int32(a.Webhook.TargetPort))},
			{Name: "http-metrics", Port: 8080, TargetPort: intstr.FromInt32(int32(a.Webhook.MetricsPort))},
		}, false, nil, in),
		s.service("binder", []corev1.ServicePort{{Name: "http-metrics", Port: 8080, TargetPort: intstr.FromInt32(8080)}}, false, nil, in),
		s.controllerService("podgroup-controller", s.PodGroupController.ControllerService.Webhook, in),
		s.controllerService("queue-controller", s.QueueController.ControllerService.Webhook, in,
			s.QueueController.ControllerService.Metrics),
	)
	for _, sh := range in.Shards {
		out = append(out, s.service(SchedulerName(s, sh.Name),
			[]corev1.ServicePort{{Name: "http-metrics", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
			true, map[string]string{"prometheus.io/scrape": "true"}, in))
	}
	return append(out, s.webhooks(in)...)
}
