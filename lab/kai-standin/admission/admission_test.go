package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"kaiops.dev/lab/kai-standin/api"
)

func plugins(o Options) *Plugins {
	if o.SchedulerName == "" {
		o.SchedulerName = "kai-scheduler"
	}
	p := NewPlugins(o)
	p.Random7 = func() string { return "k7q2xbd" }
	return p
}

func pod(name string, anns map[string]string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "main"}}
	}
	var a map[string]string
	if anns != nil {
		a = map[string]string{}
		for k, v := range anns {
			a[k] = v
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: a},
		Spec:       corev1.PodSpec{SchedulerName: "kai-scheduler", Containers: containers},
	}
}

func gpuLimit(n int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{api.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}}
}

var half = map[string]string{api.AnnGPUFraction: "0.5"}

var prefixShape = regexp.MustCompile(`^(.*)-[bcdfghjklmnpqrstvwxz2456789]{7}-shared-gpu$`)

func TestPrefix(t *testing.T) {
	long := strings.Repeat("a", 32) + "-" + strings.Repeat("b", 20)
	cases := []struct {
		name     string
		pod      *corev1.Pod
		random   bool
		wantBase string
		want     string
	}{
		{"short name", pod("uabomgfcqu", half), false, "", "uabomgfcqu-k7q2xbd-shared-gpu"},
		{"cut to 33, trailing dash trimmed", pod(long, half), false, "", strings.Repeat("a", 32) + "-k7q2xbd-shared-gpu"},
		{"cut to 33", pod(strings.Repeat("c", 50), half), false, "", strings.Repeat("c", 33) + "-k7q2xbd-shared-gpu"},
		{"owner name first", func() *corev1.Pod {
			p := pod("job-x-abcde", half)
			p.OwnerReferences = []metav1.OwnerReference{{Name: "job-x"}}
			return p
		}(), false, "", "job-x-k7q2xbd-shared-gpu"},
		{"existing annotation kept", pod("p", map[string]string{api.AnnGPUFraction: "0.5", api.AnnSharedGPUConfigMap: "given"}), false, "", "given"},
		{"real random characters", pod("rnd", half), true, "rnd", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plugins(Options{})
			if tc.random {
				p = NewPlugins(Options{SchedulerName: "kai-scheduler"})
			}
			if err := p.Mutate(tc.pod, "ns"); err != nil {
				t.Fatal(err)
			}
			got := tc.pod.Annotations[api.AnnSharedGPUConfigMap]
			if tc.random {
				m := prefixShape.FindStringSubmatch(got)
				if m == nil || m[1] != tc.wantBase {
					t.Fatalf("prefix %q does not have the shape <base>-<7>-shared-gpu", got)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("prefix = %q, want %q", got, tc.want)
			}
			if len(got+"-0-evar") > 63 {
				t.Fatalf("derived name too long: %d", len(got+"-0-evar"))
			}
		})
	}
}

func envNames(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

func TestMutateFractionPod(t *testing.T) {
	p := pod("p", map[string]string{api.AnnGPUFraction: "0.5"}, corev1.Container{Name: "main", Env: []corev1.EnvVar{
		{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}, {Name: "KEEP", Value: "1"},
	}})
	pl := plugins(Options{RuntimeClassName: "nvidia"})
	for i := 0; i < 2; i++ { // the webhook may be reinvoked: the second pass must change nothing
		if err := pl.Mutate(p, "ns"); err != nil {
			t.Fatal(err)
		}
	}
	c := p.Spec.Containers[0]
	if got := strings.Join(envNames(c), ","); got != "KEEP,NVIDIA_VISIBLE_DEVICES,RUNAI_NUM_OF_GPUS,GPU_PORTION" {
		t.Fatalf("env order = %s", got)
	}
	for _, e := range c.Env[1:] {
		ref := e.ValueFrom.ConfigMapKeyRef
		if ref == nil || ref.Name != "p-k7q2xbd-shared-gpu-0" || ref.Key != e.Name || ref.Optional != nil {
			t.Fatalf("env %s = %+v", e.Name, e.ValueFrom)
		}
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "p-k7q2xbd-shared-gpu-0-evar" ||
		c.EnvFrom[0].ConfigMapRef.Optional == nil || *c.EnvFrom[0].ConfigMapRef.Optional {
		t.Fatalf("envFrom = %+v", c.EnvFrom)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "p-k7q2xbd-shared-gpu-0-vol" ||
		p.Spec.Volumes[0].ConfigMap.Name != "p-k7q2xbd-shared-gpu-0" || len(c.VolumeMounts) != 0 {
		t.Fatalf("volumes = %+v, mounts %+v", p.Spec.Volumes, c.VolumeMounts)
	}
	if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "nvidia" {
		t.Fatalf("runtimeClassName = %v", p.Spec.RuntimeClassName)
	}
}

func TestMutateDetails(t *testing.T) {
	custom := "custom"
	empty := ""
	cases := []struct {
		name    string
		pod     *corev1.Pod
		check   func(t *testing.T, p *corev1.Pod)
		wantErr string
	}{
		{
			name: "volume name sanitised",
			pod:  pod("p", map[string]string{api.AnnGPUFraction: "0.5", api.AnnSharedGPUConfigMap: "_My.._Pod"}),
			check: func(t *testing.T, p *corev1.Pod) {
				if v := p.Spec.Volumes[0].Name; v != "my-pod-0-vol" {
					t.Fatalf("volume = %q", v)
				}
			},
		},
		{
			name: "init container named by annotation",
			pod: func() *corev1.Pod {
				p := pod("p", map[string]string{api.AnnGPUFraction: "0.5", api.AnnFractionContainer: "setup"}, corev1.Container{Name: "setup"})
				p.Spec.InitContainers = []corev1.Container{{Name: "other"}, {Name: "setup"}}
				return p
			}(),
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.InitContainers[1]
				if len(c.Env) != 3 || c.Env[0].ValueFrom.ConfigMapKeyRef.Name != "p-k7q2xbd-shared-gpu-i1" || len(p.Spec.Containers[0].Env) != 0 {
					t.Fatalf("init env %+v, main env %+v", c.Env, p.Spec.Containers[0].Env)
				}
			},
		},
		{
			name: "regular container named by annotation",
			pod:  pod("p", map[string]string{api.AnnGPUFraction: "0.5", api.AnnFractionContainer: "b"}, corev1.Container{Name: "a"}, corev1.Container{Name: "b"}),
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Containers[1].Env) != 3 || p.Spec.Containers[1].EnvFrom[0].ConfigMapRef.Name != "p-k7q2xbd-shared-gpu-1-evar" {
					t.Fatalf("containers = %+v", p.Spec.Containers)
				}
			},
		},
		{
			name:    "named container not found",
			pod:     pod("p", map[string]string{api.AnnGPUFraction: "0.5", api.AnnFractionContainer: "ghost"}),
			wantErr: "failed to get fraction container ref: container with name ghost not found for fraction request",
		},
		{
			name: "runtimeClassName kept when set",
			pod:  func() *corev1.Pod { p := pod("p", half); p.Spec.RuntimeClassName = &custom; return p }(),
			check: func(t *testing.T, p *corev1.Pod) {
				if *p.Spec.RuntimeClassName != "custom" {
					t.Fatalf("runtimeClassName = %q", *p.Spec.RuntimeClassName)
				}
			},
		},
		{
			name: "empty runtimeClassName filled",
			pod:  func() *corev1.Pod { p := pod("p", half); p.Spec.RuntimeClassName = &empty; return p }(),
			check: func(t *testing.T, p *corev1.Pod) {
				if *p.Spec.RuntimeClassName != "nvidia" {
					t.Fatalf("runtimeClassName = %q", *p.Spec.RuntimeClassName)
				}
			},
		},
		{
			name: "no fraction: untouched",
			pod:  pod("p", nil),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Spec.RuntimeClassName != nil || len(p.Spec.Volumes) != 0 || len(p.Spec.Containers[0].Env) != 0 {
					t.Fatalf("pod changed: %+v", p.Spec)
				}
			},
		},
		{
			name: "other scheduler: untouched",
			pod: func() *corev1.Pod {
				p := pod("p", half)
				p.Spec.SchedulerName = "default-scheduler"
				p.Namespace = "elsewhere"
				return p
			}(),
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Volumes) != 0 || p.Annotations[api.AnnSharedGPUConfigMap] != "" {
					t.Fatalf("pod changed: %+v", p)
				}
			},
		},
		{
			name: "empty namespace filled from the request",
			pod:  func() *corev1.Pod { p := pod("p", nil); p.Namespace = ""; return p }(),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Namespace != "ns" {
					t.Fatalf("namespace = %q", p.Namespace)
				}
			},
		},
		{
			name:    "namespace mismatch",
			pod:     func() *corev1.Pod { p := pod("p", nil); p.Namespace = "other"; return p }(),
			wantErr: "error: the namespace from the provided object other does not match the namespace ns",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := plugins(Options{RuntimeClassName: "nvidia"}).Mutate(tc.pod, "ns")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, tc.pod)
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		sharing bool
		anns    map[string]string
		limit   bool
		want    string
	}{
		{"sharing disabled", false, half, false, "attempting to create a pod ns/p with gpu sharing request, while GPU sharing is disabled"},
		{"sharing disabled, memory", false, map[string]string{api.AnnGPUMemory: "100"}, false, "attempting to create a pod ns/p with gpu sharing request, while GPU sharing is disabled"},
		{"mps without fraction", true, map[string]string{api.AnnMPS: "true"}, false, "MPS is only supported with GPU fraction request"},
		{"fraction and GPU limit", true, half, true, "cannot have both GPU fraction request and whole GPU resource request/limit"},
		{"memory and fraction", true, map[string]string{api.AnnGPUMemory: "100", api.AnnGPUFraction: "0.5"}, false, "cannot request both GPU and GPU memory"},
		{"memory and GPU limit", true, map[string]string{api.AnnGPUMemory: "100"}, true, "cannot request both GPU and GPU memory"},
		{"num devices alone", true, map[string]string{api.AnnGPUFractionNumDevs: "2"}, false, "cannot request multiple fractional devices without specifying fraction portion or gpu-memory"},
		{"memory zero", true, map[string]string{api.AnnGPUMemory: "0"}, false, "gpu-memory annotation value must be a positive integer greater than 0"},
		{"memory text", true, map[string]string{api.AnnGPUMemory: "2Gi"}, false, "gpu-memory annotation value must be a positive integer greater than 0"},
		{"fraction one", true, map[string]string{api.AnnGPUFraction: "1"}, false, "gpu-fraction annotation value must be a positive number smaller than 1.0"},
		{"fraction negative", true, map[string]string{api.AnnGPUFraction: "-0.5"}, false, "gpu-fraction annotation value must be a positive number smaller than 1.0"},
		{"fraction text", true, map[string]string{api.AnnGPUFraction: "half"}, false, "gpu-fraction annotation value must be a positive number smaller than 1.0"},
		{"fraction not a quantity", true, map[string]string{api.AnnGPUFraction: "0x1p-1"}, false, "gpu-fraction annotation value must be a float written with a decimal point or a scientific notation .given value: 0x1p-1"},
		{"num devices zero", true, map[string]string{api.AnnGPUFraction: "0.5", api.AnnGPUFractionNumDevs: "0"}, false, "fraction count annotation value must be a positive integer greater than 0"},
		{"valid fraction", true, half, false, ""},
		{"valid scientific fraction", true, map[string]string{api.AnnGPUFraction: "5e-1"}, false, ""},
		{"valid memory with devices", true, map[string]string{api.AnnGPUMemory: "2000", api.AnnGPUFractionNumDevs: "2"}, false, ""},
		{"whole GPU only", true, nil, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := corev1.Container{Name: "main"}
			if tc.limit {
				c.Resources = gpuLimit(1)
			}
			err := plugins(Options{GPUSharingEnabled: tc.sharing}).Validate(pod("p", tc.anns, c))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("Validate = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeviceAccess(t *testing.T) {
	env := func(v string, from bool) []corev1.EnvVar {
		e := corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: v}
		if from {
			e.Value = ""
			e.ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
		}
		return []corev1.EnvVar{e}
	}
	cases := []struct {
		name      string
		block     bool
		c         corev1.Container
		wantEnv   string
		wantError string
	}{
		{"blocked: void added", true, corev1.Container{Name: "cpu"}, "void", ""},
		{"blocked: none allowed", true, corev1.Container{Name: "cpu", Env: env("none", false)}, "none", ""},
		{"blocked: own value rejected", true, corev1.Container{Name: "cpu", Env: env("all", false)}, "all",
			`container cpu may set NVIDIA_VISIBLE_DEVICES only to void or none without a GPU request, got "all"`},
		{"blocked: valueFrom rejected", true, corev1.Container{Name: "cpu", Env: env("", true)}, "",
			"container cpu may not take NVIDIA_VISIBLE_DEVICES from valueFrom without a GPU request"},
		{"blocked: whole-GPU container left alone", true, corev1.Container{Name: "gpu", Resources: gpuLimit(1), Env: env("all", false)}, "all", ""},
		{"not blocked (default): anything goes", false, corev1.Container{Name: "cpu", Env: env("all", false)}, "all", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl := plugins(Options{BlockNvidiaVisibleDevices: tc.block, GPUSharingEnabled: true})
			p := pod("p", nil, tc.c)
			if err := pl.Mutate(p, "ns"); err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, e := range p.Spec.Containers[0].Env {
				if e.Name == "NVIDIA_VISIBLE_DEVICES" {
					got = e.Value
				}
			}
			if got != tc.wantEnv {
				t.Fatalf("NVIDIA_VISIBLE_DEVICES = %q, want %q", got, tc.wantEnv)
			}
			err := pl.Validate(p)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tc.wantError {
				t.Fatalf("Validate = %q, want %q", msg, tc.wantError)
			}
		})
	}
	t.Run("fraction container is not blocked", func(t *testing.T) {
		pl := plugins(Options{BlockNvidiaVisibleDevices: true, GPUSharingEnabled: true})
		p := pod("p", half, corev1.Container{Name: "main"}, corev1.Container{Name: "side"})
		if err := pl.Mutate(p, "ns"); err != nil {
			t.Fatal(err)
		}
		if err := pl.Validate(p); err != nil {
			t.Fatal(err)
		}
		if n := envNames(p.Spec.Containers[1]); len(n) != 1 || p.Spec.Containers[1].Env[0].Value != "void" {
			t.Fatalf("side container env = %+v", p.Spec.Containers[1].Env)
		}
	})
}

// TestHandlers goes through the controller-runtime handlers: a JSON patch on the way
// in, a denial with KAI's message on the way out, UPDATE validated too.
func TestHandlers(t *testing.T) {
	mutate, validate := Handlers(plugins(Options{GPUSharingEnabled: false, RuntimeClassName: "nvidia"}))
	raw, _ := json.Marshal(pod("p", half))
	req := func(op admissionv1.Operation) cradmission.Request {
		return cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}}
	}
	resp := mutate.Handle(context.Background(), req(admissionv1.Create))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("mutate response = %+v", resp)
	}
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		t.Run(string(op), func(t *testing.T) {
			resp := validate.Handle(context.Background(), req(op))
			if resp.Allowed || resp.Result.Message != "attempting to create a pod ns/p with gpu sharing request, while GPU sharing is disabled" {
				t.Fatalf("validate response = %+v", resp.Result)
			}
		})
	}
}

// TestTopologyWebhook: KAI's Topology validation refuses duplicated aliases and aliases
// equal to a nodeLabel, on CREATE and UPDATE, in one message.
func TestTopologyWebhook(t *testing.T) {
	cases := []struct {
		name, levels, refusal string
	}{
		{"no aliases", `[{"nodeLabel": "zone"}, {"nodeLabel": "kubernetes.io/hostname"}]`, ""},
		{"distinct aliases", `[{"nodeLabel": "cloud/block", "alias": "block"}, {"nodeLabel": "cloud/rack", "alias": "rack"}]`, ""},
		{"duplicated alias", `[{"nodeLabel": "a", "alias": "x"}, {"nodeLabel": "b", "alias": "x"}, {"nodeLabel": "c", "alias": "x"}]`,
			"invalid topology aliases: aliases must be unique within the topology; duplicated: [x x]"},
		{"alias equal to a nodeLabel", `[{"nodeLabel": "rack", "alias": "zone"}, {"nodeLabel": "zone", "alias": "z"}]`,
			"invalid topology aliases: an alias must not equal a nodeLabel; conflicting: [zone]"},
		{"both, sorted", `[{"nodeLabel": "b", "alias": "y"}, {"nodeLabel": "y", "alias": "b"}, {"nodeLabel": "c", "alias": "b"}]`,
			"invalid topology aliases: aliases must be unique within the topology; duplicated: [b]; an alias must not equal a nodeLabel; conflicting: [b b y]"},
	}
	h := TopologyHandler()
	for _, tc := range cases {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			t.Run(tc.name+"/"+string(op), func(t *testing.T) {
				obj := []byte(`{"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "spec": {"levels": ` + tc.levels + `}}`)
				resp := h.Handle(context.Background(), cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					Operation: op, Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: obj},
				}})
				if tc.refusal == "" {
					if !resp.Allowed {
						t.Fatalf("refused: %+v", resp.Result)
					}
					return
				}
				if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != tc.refusal {
					t.Fatalf("response %v %+v, want %q", resp.Allowed, resp.Result, tc.refusal)
				}
			})
		}
	}
}
