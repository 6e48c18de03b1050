package operator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const specJSON = `{
  "namespace": "kai-scheduler",
  "admission": {"service": {"image": {"repository": "reg/kai", "name": "admission", "tag": "v0.16.14"}}, "gpuSharing": true},
  "binder": {"service": {"image": {"repository": "reg/kai", "name": "binder", "tag": "v0.16.14"}},
             "resourceReservation": {"image": {"repository": "reg/kai", "name": "resourcereservation", "tag": "v0.16.14"}}},
  "scheduler": {"service": {"image": {"repository": "reg/kai", "name": "scheduler", "tag": "v0.16.14"}}},
  "standin": {"release": "v0.16.14", "configmapWrite": "race-fix-guarded", "build": "b1"}
}`

var fallbacks = Fallbacks{Namespace: "kai-scheduler", Repository: "reg/kai", Tag: "v0.16.13"}

func mustSpec(t *testing.T, raw string) Spec {
	t.Helper()
	s, err := ParseSpec([]byte(raw), fallbacks)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func byName(objs []client.Object) map[string]client.Object {
	out := map[string]client.Object{}
	for _, o := range objs {
		out[o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName()] = o
	}
	return out
}

func container(t *testing.T, objs map[string]client.Object, name string) corev1.Container {
	t.Helper()
	d, ok := objs["Deployment/"+name].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("no Deployment %s in %v", name, keys(objs))
	}
	return d.Spec.Template.Spec.Containers[0]
}

func keys(m map[string]client.Object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestRenderObjects(t *testing.T) {
	s := mustSpec(t, specJSON)
	in := Inputs{Shards: []Shard{{Name: "default"}}, FakeGPUNodes: true, Certs: testCerts,
		Annotations: map[string]string{"meta.helm.sh/release-name": "kai-scheduler"}}
	objs := byName(Render(s, in))
	want := []string{
		"Deployment/admission", "Deployment/binder", "Deployment/kai-scheduler-default", "Deployment/pod-grouper",
		"Deployment/podgroup-controller", "Deployment/queue-controller",
		"MutatingWebhookConfiguration/mutating-kai-admission", "Service/admission", "Service/binder",
		"Service/kai-scheduler-default", "Service/podgroup-controller", "Service/queue-controller",
		"ValidatingWebhookConfiguration/kai-podgroup-validation-v2alpha2", "ValidatingWebhookConfiguration/kai-queue-validation-v2",
		"ValidatingWebhookConfiguration/validating-kai-admission",
	}
	if got := keys(objs); !slices.Equal(got, want) {
		t.Fatalf("objects = %v, want %v", got, want)
	}
	for k, o := range objs {
		t.Run(k, func(t *testing.T) {
			l := o.GetLabels()
			if l[ManagedByLabel] != ManagedBy || l[ImplementationLabel] != "standin" || l[ReleaseKey] != "v0.16.14" {
				t.Fatalf("labels = %v", l)
			}
			if o.GetAnnotations()["meta.helm.sh/release-name"] != "kai-scheduler" {
				t.Fatalf("annotations = %v", o.GetAnnotations())
			}
		})
	}
}

// testCerts: each webhook Service's CA and certificate hash, told apart.
var testCerts = map[string]Cert{
	"admission":           {CABundle: []byte("CA"), Hash: "abc"},
	"podgroup-controller": {CABundle: []byte("CA-pg"), Hash: "pg"},
	"queue-controller":    {CABundle: []byte("CA-q"), Hash: "q"},
}

func TestRenderDeployments(t *testing.T) {
	s := mustSpec(t, specJSON)
	objs := byName(Render(s, Inputs{Shards: []Shard{{Name: "default"}}, FakeGPUNodes: true, Certs: testCerts}))
	cases := []struct {
		name, image, component string
		args                   []string
		strategy               appsv1.DeploymentStrategyType
		secret, certHash       string // the serving certificate mounted, "" none
	}{
		{"binder", "reg/kai/binder:v0.16.14", "binder",
			[]string{"--resource-reservation-pod-image", "reg/kai/resourcereservation:v0.16.14", "--fake-gpu-nodes", "--standin-configmap-write=race-fix-guarded", "--max-concurrent-reconciles=10", "--resource-reservation-allocation-timeout=40"},
			appsv1.RecreateDeploymentStrategyType, "", ""},
		{"admission", "reg/kai/admission:v0.16.14", "admission",
			[]string{"--webhook-addr", "9443", "--gpu-sharing-enabled=true", "--gpu-fraction-runtime-class-name", "nvidia", "--cert-dir"},
			appsv1.RecreateDeploymentStrategyType, WebhookSecret, "abc"},
		{"kai-scheduler-default", "reg/kai/scheduler:v0.16.14", "scheduler",
			[]string{"--scheduler-name=kai-scheduler", "--partition-label-value=", "--schedule-period=1s", "--listen-address=:8080"},
			appsv1.RollingUpdateDeploymentStrategyType, "", ""},
		// no tag in the spec: the operator's MS_TAG is the fallback
		{"pod-grouper", "reg/kai/podgrouper:v0.16.13", "pod-grouper",
			[]string{"--queue-label-key", "kai.scheduler/queue"}, appsv1.RollingUpdateDeploymentStrategyType, "", ""},
		// KAI's webhook servers on their defaults: the Secret mounted where they look, no flag
		{"podgroup-controller", "reg/kai/podgroupcontroller:v0.16.13", "podgroup-controller",
			[]string{"--scheduler-name", "kai-scheduler"}, appsv1.RollingUpdateDeploymentStrategyType, PodGroupSecret, "pg"},
		{"queue-controller", "reg/kai/queuecontroller:v0.16.13", "queue-controller",
			[]string{"--metrics-listen-address", ":8080", "--zap-devel=false"}, appsv1.RollingUpdateDeploymentStrategyType, QueueSecret, "q"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := objs["Deployment/"+tc.name].(*appsv1.Deployment)
			c := container(t, objs, tc.name)
			if c.Name != tc.name || d.Spec.Template.Spec.ServiceAccountName != tc.name || d.Spec.Selector.MatchLabels["app"] != tc.name {
				t.Fatalf("name/SA/selector: %s %s %v", c.Name, d.Spec.Template.Spec.ServiceAccountName, d.Spec.Selector.MatchLabels)
			}
			if c.Image != tc.image {
				t.Fatalf("image = %s, want %s", c.Image, tc.image)
			}
			if c.Args[0] != tc.component || c.Args[1] != "--standin-release=v0.16.14" {
				t.Fatalf("args start %v", c.Args[:2])
			}
			for _, a := range tc.args {
				if !slices.Contains(c.Args, a) {
					t.Fatalf("args %v lack %q", c.Args, a)
				}
			}
			if d.Spec.Strategy.Type != tc.strategy {
				t.Fatalf("strategy = %s", d.Spec.Strategy.Type)
			}
			if d.Spec.Template.Annotations[BuildAnnotation] != "b1" || d.Spec.Template.Annotations[ReleaseKey] != "v0.16.14" {
				t.Fatalf("pod annotations = %v", d.Spec.Template.Annotations)
			}
			if !*c.SecurityContext.RunAsNonRoot || *c.SecurityContext.RunAsUser != 10000 {
				t.Fatalf("securityContext = %+v", c.SecurityContext)
			}
			vols := d.Spec.Template.Spec.Volumes
			if tc.secret == "" {
				if len(vols) != 0 || len(c.VolumeMounts) != 0 || d.Spec.Template.Annotations[CertAnnotation] != "" {
					t.Fatalf("volumes %+v mounts %+v", vols, c.VolumeMounts)
				}
				return
			}
			if len(vols) != 1 || vols[0].Secret == nil || vols[0].Secret.SecretName != tc.secret ||
				len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/tmp/k8s-webhook-server/serving-certs" || !c.VolumeMounts[0].ReadOnly {
				t.Fatalf("volumes %+v mounts %+v", vols, c.VolumeMounts)
			}
			if d.Spec.Template.Annotations[CertAnnotation] != tc.certHash {
				t.Fatalf("a new certificate must roll the pod: annotations %v", d.Spec.Template.Annotations)
			}
		})
	}
}

func TestRenderOptionalArgs(t *testing.T) {
	cases := []struct {
		name      string
		spec      string
		fake      bool
		component string
		has, lack []string
	}{
		{"no fake nodes", `{}`, false, "binder", nil, []string{"--fake-gpu-nodes"}},
		{"fake nodes forced", `{"standin": {"fakeGpuNodes": true}}`, false, "binder", []string{"--fake-gpu-nodes"}, nil},
		{"no behaviour in the spec", `{}`, true, "binder", []string{"--fake-gpu-nodes"}, []string{"--standin-configmap-write=race-fix-guarded"}},
		{"sharing off", `{}`, false, "admission", nil, []string{"--gpu-sharing-enabled=true"}},
		{"visible devices blocked", `{"admission": {"blockNvidiaVisibleDevices": true}}`, false, "admission", []string{"--block-nvidia-visible-devices=true"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := byName(Render(mustSpec(t, tc.spec), Inputs{FakeGPUNodes: tc.fake}))
			args := container(t, objs, tc.component).Args
			for _, a := range tc.has {
				if !slices.Contains(args, a) {
					t.Fatalf("args %v lack %q", args, a)
				}
			}
			for _, a := range tc.lack {
				if slices.Contains(args, a) {
					t.Fatalf("args %v have %q", args, a)
				}
			}
		})
	}
}

// TestRenderFaults: kai-config's spec.standin.faults reach every component as
// --standin-faults (sorted, once each), right after the release; none, no flag.
func TestRenderFaults(t *testing.T) {
	cases := []struct {
		name string
		spec string
		want string
	}{
		{"healthy: no flag", `{}`, ""},
		{"empty list: no flag", `{"standin": {"faults": []}}`, ""},
		{"passed to every component", `{"standin": {"faults": ["gang-broken", "api-unauthorized", "gang-broken"]}}`,
			"--standin-faults=api-unauthorized,gang-broken"},
		{"unknown names are the components' to refuse", `{"standin": {"faults": ["bogus"]}}`, "--standin-faults=bogus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSpec(t, tc.spec)
			shards := []Shard{{Name: "default"}}
			objs := byName(Render(s, Inputs{Shards: shards}))
			for _, name := range DeploymentNames(s, shards) {
				args := container(t, objs, name).Args
				var got []string
				for _, a := range args {
					if strings.HasPrefix(a, "--standin-faults") {
						got = append(got, a)
					}
				}
				if strings.Join(got, " ") != tc.want || (tc.want != "" && args[2] != tc.want) {
					t.Fatalf("%s args %v, want %q third", name, args, tc.want)
				}
			}
		})
	}
}

func TestRenderShards(t *testing.T) {
	s := mustSpec(t, `{}`)
	cases := []struct {
		name   string
		shards []Shard
		want   []string
	}{
		{"none", nil, []string{"admission", "binder", "pod-grouper", "podgroup-controller", "queue-controller"}},
		{"default and a pool", []Shard{{Name: "default"}, {Name: "pool-a", PartitionLabelValue: "a"}},
			[]string{"admission", "binder", "kai-scheduler-default", "kai-scheduler-pool-a", "pod-grouper", "podgroup-controller", "queue-controller"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeploymentNames(s, tc.shards); !slices.Equal(got, tc.want) {
				t.Fatalf("names = %v", got)
			}
			objs := byName(Render(s, Inputs{Shards: tc.shards}))
			for _, sh := range tc.shards {
				args := container(t, objs, SchedulerName(s, sh.Name)).Args
				if !slices.Contains(args, "--partition-label-value="+sh.PartitionLabelValue) {
					t.Fatalf("args %v", args)
				}
				if objs["Service/"+SchedulerName(s, sh.Name)].(*corev1.Service).Spec.ClusterIP != corev1.ClusterIPNone {
					t.Fatal("scheduler Service is not headless")
				}
			}
		})
	}
}

// TestRenderWebhooks: KAI's four configurations and five webhooks, as its operator
// renders them (CONTRACT.md, "The real KAI on the lab, 2026-12-07: its webhooks").
func TestRenderWebhooks(t *testing.T) {
	s := mustSpec(t, `{"namespace": "kai"}`)
	objs := byName(Render(s, Inputs{Certs: testCerts}))
	type hook struct {
		config, app, name, service, path, ca string
		group, version, resource             string
		scope                                admissionv1.ScopeType
		ops                                  []admissionv1.OperationType
		podSelectors                         bool // namespace selector and scheduler-name match condition
	}
	cu := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}
	want := []hook{
		{"MutatingWebhookConfiguration/mutating-kai-admission", "admission", "admission.kai.svc", "admission", "/mutate--v1-pod", "CA",
			"", "v1", "pods", admissionv1.NamespacedScope, []admissionv1.OperationType{admissionv1.Create}, true},
		{"ValidatingWebhookConfiguration/validating-kai-admission", "admission", "admission.kai.svc", "admission", "/validate--v1-pod", "CA",
			"", "v1", "pods", admissionv1.NamespacedScope, cu, true},
		{"ValidatingWebhookConfiguration/validating-kai-admission", "admission", "topology.admission.kai.svc", "admission",
			"/validate-kai-scheduler-v1alpha1-topology", "CA", "kai.scheduler", "v1alpha1", "topologies", admissionv1.ClusterScope, cu, false},
		{"ValidatingWebhookConfiguration/kai-podgroup-validation-v2alpha2", "podgroup-controller", "podgroup-validation.kai.scheduler",
			"podgroup-controller", "/validate-scheduling-run-ai-v2alpha2-podgroup", "CA-pg",
			"scheduling.run.ai", "v2alpha2", "podgroups", admissionv1.NamespacedScope, cu, false},
		{"ValidatingWebhookConfiguration/kai-queue-validation-v2", "queue-controller", "queue-validation.kai.scheduler",
			"queue-controller", "/validate-scheduling-run-ai-v2-queue", "CA-q",
			"scheduling.run.ai", "v2", "queues", admissionv1.ClusterScope, cu, false},
	}
	type rendered struct {
		hook
		cc        admissionv1.WebhookClientConfig
		rules     []admissionv1.RuleWithOperations
		fail      *admissionv1.FailurePolicyType
		effects   *admissionv1.SideEffectClass
		timeout   *int32
		review    []string
		selector  *metav1.LabelSelector
		object    *metav1.LabelSelector
		match     []admissionv1.MatchCondition
		mutatingM *admissionv1.ReinvocationPolicyType
	}
	var got []rendered
	configs := 0
	for _, k := range keys(objs) {
		switch o := objs[k].(type) {
		case *admissionv1.MutatingWebhookConfiguration:
			configs++
			for _, w := range o.Webhooks {
				got = append(got, rendered{hook{config: k, app: o.Labels["app"], name: w.Name}, w.ClientConfig, w.Rules, w.FailurePolicy,
					w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions, w.ReinvocationPolicy})
			}
		case *admissionv1.ValidatingWebhookConfiguration:
			configs++
			for _, w := range o.Webhooks {
				got = append(got, rendered{hook{config: k, app: o.Labels["app"], name: w.Name}, w.ClientConfig, w.Rules, w.FailurePolicy,
					w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions, nil})
			}
		}
	}
	if configs != 4 || len(got) != len(want) {
		t.Fatalf("%d configurations, %d webhooks: %v", configs, len(got), keys(objs))
	}
	slices.SortFunc(got, func(a, b rendered) int { return strings.Compare(a.config+a.name, b.config+b.name) })
	slices.SortFunc(want, func(a, b hook) int { return strings.Compare(a.config+a.name, b.config+b.name) })
	for i, w := range want {
		g := got[i]
		t.Run(w.name+"/"+w.resource, func(t *testing.T) {
			if g.config != w.config || g.name != w.name || g.app != w.app {
				t.Fatalf("webhook %s in %s (app %q), want %s in %s (app %q)", g.name, g.config, g.app, w.name, w.config, w.app)
			}
			svc := g.cc.Service
			if svc == nil || svc.Name != w.service || svc.Namespace != "kai" || *svc.Path != w.path || *svc.Port != 443 || string(g.cc.CABundle) != w.ca {
				t.Fatalf("clientConfig %+v service %+v", g.cc, svc)
			}
			if len(g.rules) != 1 || !slices.Equal(g.rules[0].Operations, w.ops) || !slices.Equal(g.rules[0].APIGroups, []string{w.group}) ||
				!slices.Equal(g.rules[0].APIVersions, []string{w.version}) || !slices.Equal(g.rules[0].Resources, []string{w.resource}) ||
				*g.rules[0].Scope != w.scope {
				t.Fatalf("rules %+v", g.rules)
			}
			if *g.fail != admissionv1.Fail || *g.effects != admissionv1.SideEffectClassNone || *g.timeout != 10 || !slices.Equal(g.review, []string{"v1"}) {
				t.Fatalf("failurePolicy %s sideEffects %s timeout %d review %v", *g.fail, *g.effects, *g.timeout, g.review)
			}
			if g.object != nil {
				t.Fatalf("objectSelector %+v", g.object)
			}
			if !w.podSelectors {
				if g.selector != nil || g.match != nil {
					t.Fatalf("pod selectors on a webhook for %s: %+v %+v", w.resource, g.selector, g.match)
				}
				return
			}
			if !slices.Equal(g.selector.MatchExpressions[0].Values, []string{"kube-system", "kai"}) {
				t.Fatalf("namespaceSelector %+v", g.selector)
			}
			if len(g.match) != 1 || g.match[0].Name != "scheduler-name-match" || g.match[0].Expression != "object.spec.schedulerName == 'kai-scheduler'" {
				t.Fatalf("matchConditions %+v", g.match)
			}
			if (w.config == "MutatingWebhookConfiguration/mutating-kai-admission") != (g.mutatingM != nil && *g.mutatingM == admissionv1.IfNeededReinvocationPolicy) {
				t.Fatalf("reinvocationPolicy %v", g.mutatingM)
			}
		})
	}
}

// TestRenderControllerServices: the podgroup-controller's and queue-controller's
// Services, KAI's ports and names; webhooks.enableValidation false drops a configuration
// but not the Service; the prefix names it.
func TestRenderControllerServices(t *testing.T) {
	objs := byName(Render(mustSpec(t, `{}`), Inputs{}))
	cases := []struct {
		name  string
		ports []corev1.ServicePort
	}{
		{"podgroup-controller", []corev1.ServicePort{{Name: "webhook", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9443)}}},
		{"queue-controller", []corev1.ServicePort{
			{Name: "webhook", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9443)},
			{Name: "metrics", Port: 8080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := objs["Service/"+tc.name].(*corev1.Service)
			if !slices.Equal(svc.Spec.Ports, tc.ports) || svc.Spec.Selector["app"] != tc.name || svc.Labels["app"] != tc.name {
				t.Fatalf("Service %+v labels %v", svc.Spec, svc.Labels)
			}
		})
	}
	off := byName(Render(mustSpec(t, `{"podGroupController": {"webhooks": {"enableValidation": false}},
		"queueController": {"webhooks": {"webhookConfigurationNamePrefix": "q-"}}}`), Inputs{}))
	if _, ok := off["ValidatingWebhookConfiguration/kai-podgroup-validation-v2alpha2"]; ok {
		t.Fatal("podgroup validation registered though turned off")
	}
	if _, ok := off["Service/podgroup-controller"]; !ok {
		t.Fatal("the podgroup-controller's Service went with its webhook")
	}
	if _, ok := off["ValidatingWebhookConfiguration/q-v2"]; !ok {
		t.Fatalf("no q-v2 in %v", keys(off))
	}
}

func TestParseSpecDefaults(t *testing.T) {
	cases := []struct {
		name, raw string
		check     func(Spec) bool
	}{
		{"empty spec: KAI's defaults", `{}`, func(s Spec) bool {
			return s.Namespace == "kai-scheduler" && s.Global.SchedulerName == "kai-scheduler" &&
				s.Binder.ResourceReservation.Namespace == "kai-resource-reservation" && s.Admission.Webhook.TargetPort == 9443
		}},
		{"image tag from the spec wins over MS_TAG", `{"binder": {"service": {"image": {"tag": "v9"}}}}`, func(s Spec) bool {
			return s.Binder.Service.Image.Ref() == "reg/kai/binder:v9" && s.Scheduler.Service.Image.Ref() == "reg/kai/scheduler:v0.16.13"
		}},
		{"unknown fields are ignored", `{"prometheus": {"enabled": true}, "namespace": "x"}`, func(s Spec) bool { return s.Namespace == "x" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if s := mustSpec(t, tc.raw); !tc.check(s) {
				t.Fatalf("spec = %+v", s)
			}
		})
	}
	if _, err := ParseSpec([]byte(`{"namespace": 3}`), fallbacks); err == nil {
		t.Fatal("a malformed spec parsed")
	}
}

func dep(name string, gen, observed int64, updated, available, replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, AvailableReplicas: available, Replicas: replicas}
	return d
}

func TestConditions(t *testing.T) {
	wanted := []string{"binder", "admission"}
	done := map[string]*appsv1.Deployment{"binder": dep("binder", 2, 2, 1, 1, 1), "admission": dep("admission", 1, 1, 1, 1, 1)}
	cases := []struct {
		name     string
		obs      Observation
		want     map[string]metav1.ConditionStatus
		availMsg string
	}{
		{"all rolled out", Observation{Generation: 3, Wanted: wanted, Deployments: done},
			map[string]metav1.ConditionStatus{Reconciling: "False", Deployed: "True", Available: "True", DependenciesFulfilled: "True", Ready: "True"}, "System available"},
		{"one missing", Observation{Generation: 3, Wanted: wanted, Deployments: map[string]*appsv1.Deployment{"binder": done["binder"]}},
			map[string]metav1.ConditionStatus{Reconciling: "False", Deployed: "True", Available: "False", Ready: "False"}, "admission (not found)"},
		{"new generation not yet observed", Observation{Generation: 3, Wanted: wanted, Deployments: map[string]*appsv1.Deployment{"binder": dep("binder", 3, 2, 1, 1, 1), "admission": done["admission"]}},
			map[string]metav1.ConditionStatus{Available: "False", Ready: "False"}, "binder"},
		{"old pod still there", Observation{Generation: 3, Wanted: wanted, Deployments: map[string]*appsv1.Deployment{"binder": dep("binder", 2, 2, 1, 1, 2), "admission": done["admission"]}},
			map[string]metav1.ConditionStatus{Available: "False", Ready: "False"}, "binder"},
		{"apply failed", Observation{Generation: 3, ApplyErr: errors.New("boom"), Wanted: wanted, Deployments: done},
			map[string]metav1.ConditionStatus{Reconciling: "True", Deployed: "False", Available: "False", DependenciesFulfilled: "False", Ready: "False"}, "failed to apply"},
	}
	reasons := map[string]string{Reconciling: "reconciled", Deployed: "deployed", Available: "available", DependenciesFulfilled: "dependencies_fulfilled", Ready: "ready"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Conditions(tc.obs)
			if len(got) != 5 {
				t.Fatalf("%d conditions", len(got))
			}
			for _, c := range got {
				if c.ObservedGeneration != 3 || c.Reason != reasons[c.Type] {
					t.Fatalf("%s: generation %d reason %s", c.Type, c.ObservedGeneration, c.Reason)
				}
				if want, ok := tc.want[c.Type]; ok && c.Status != want {
					t.Fatalf("%s = %s, want %s (%s)", c.Type, c.Status, want, c.Message)
				}
				if c.Type == Available && !strings.Contains(c.Message, tc.availMsg) {
					t.Fatalf("Available message %q lacks %q", c.Message, tc.availMsg)
				}
			}
		})
	}
}

func TestMerge(t *testing.T) {
	first := Conditions(Observation{Generation: 1})
	merged, changed := Merge(nil, first)
	if !changed || len(merged) != 5 {
		t.Fatalf("first merge: changed=%v %d", changed, len(merged))
	}
	if _, changed := Merge(merged, Conditions(Observation{Generation: 1})); changed {
		t.Fatal("the same conditions again changed the status (a reconcile loop)")
	}
	next, changed := Merge(merged, Conditions(Observation{Generation: 2}))
	if !changed || next[0].ObservedGeneration != 2 || !next[0].LastTransitionTime.Equal(&merged[0].LastTransitionTime) {
		t.Fatalf("a new generation: changed=%v %+v", changed, next[0])
	}
}

func TestServingCert(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c, err := NewServingCert("admission", "kai-scheduler", now)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewServingCert("admission", "kai-scheduler", now)
	queue, _ := NewServingCert("queue-controller", "kai-scheduler", now)
	cases := []struct {
		name    string
		cert    ServingCert
		service string
		ns      string
		at      time.Time
		want    bool
	}{
		{"fresh", c, "admission", "kai-scheduler", now, true},
		{"another namespace", c, "admission", "elsewhere", now, false},
		{"another Service", c, "queue-controller", "kai-scheduler", now, false},
		{"the queue-controller's own", queue, "queue-controller", "kai-scheduler", now, true},
		{"about to expire", c, "admission", "kai-scheduler", now.AddDate(10, 0, -10), false},
		{"key of another pair", ServingCert{Cert: c.Cert, Key: other.Key, CA: c.CA}, "admission", "kai-scheduler", now, false},
		{"another CA", ServingCert{Cert: c.Cert, Key: c.Key, CA: other.CA}, "admission", "kai-scheduler", now, false},
		{"empty", ServingCert{}, "admission", "kai-scheduler", now, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cert.Usable(tc.service, tc.ns, tc.at); got != tc.want {
				t.Fatalf("Usable = %v", got)
			}
		})
	}
	if c.Hash() == other.Hash() || len(c.Hash()) != 16 {
		t.Fatal("hash does not tell certificates apart")
	}
}

// TestShardReconcilerWithoutConfig: as KAI's schedulingshard controller, a shard's event
// fails while Config kai-config is missing (controller-runtime then logs and retries),
// and is fine once it exists or when the shard is gone.
func TestShardReconcilerWithoutConfig(t *testing.T) {
	shard := &unstructured.Unstructured{}
	shard.SetGroupVersionKind(ShardGVK)
	shard.SetName("default")
	config := newConfig()
	config.SetName(ConfigName)
	cases := []struct {
		name        string
		objs        []client.Object
		notFoundErr bool
	}{
		{"no kai-config: the reconcile fails NotFound", []client.Object{shard.DeepCopy()}, true},
		{"kai-config there", []client.Object{shard.DeepCopy(), config.DeepCopy()}, false},
		{"shard gone", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.objs...).Build()
			_, err := (&ShardReconciler{Client: c}).Reconcile(context.Background(),
				ctrl.Request{NamespacedName: types.NamespacedName{Name: "default"}})
			if tc.notFoundErr != apierrors.IsNotFound(err) || (!tc.notFoundErr && err != nil) {
				t.Fatalf("error = %v, want NotFound: %v", err, tc.notFoundErr)
			}
		})
	}
}
