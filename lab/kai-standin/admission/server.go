package admission

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"kaiops.dev/lab/kai-standin/internal/boot"
)

const (
	MutatePath   = "/mutate--v1-pod"
	ValidatePath = "/validate--v1-pod"
)

type mutateHandler struct{ p *Plugins }

func (h mutateHandler) Handle(_ context.Context, req cradmission.Request) cradmission.Response {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return cradmission.Errored(http.StatusBadRequest, err)
	}
	if err := h.p.Mutate(pod, req.Namespace); err != nil {
		return cradmission.Denied(err.Error())
	}
	out, err := json.Marshal(pod)
	if err != nil {
		return cradmission.Errored(http.StatusInternalServerError, err)
	}
	return cradmission.PatchResponseFromRaw(req.Object.Raw, out)
}

type validateHandler struct{ p *Plugins }

func (h validateHandler) Handle(_ context.Context, req cradmission.Request) cradmission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return cradmission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return cradmission.Errored(http.StatusBadRequest, err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if err := h.p.Validate(pod); err != nil {
		return cradmission.Denied(err.Error())
	}
	return cradmission.Allowed("")
}

// Handlers exposes both webhooks, for the server and for tests.
func Handlers(p *Plugins) (mutate, validate cradmission.Handler) {
	return mutateHandler{p}, validateHandler{p}
}

// ServerOptions is where the webhook serves.
type ServerOptions struct {
	Port                   int
	CertDir                string
	MetricsAddr, ProbeAddr string
	SkipNameValidation     bool
}

// Main runs `kai-standin admission`.
func Main(args []string) error {
	fs := flag.NewFlagSet("admission", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var o Options
	var so ServerOptions
	var webhookAddr string
	var hamiCore, fakeGPUNodes bool
	fs.StringVar(&o.SchedulerName, "scheduler-name", "kai-scheduler", "only pods with this schedulerName are touched")
	fs.StringVar(&webhookAddr, "webhook-addr", "9443", "webhook server port")
	fs.StringVar(&so.ProbeAddr, "health-probe-bind-address", ":8081", "healthz/readyz address")
	fs.StringVar(&so.MetricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.BoolVar(&o.GPUSharingEnabled, "gpu-sharing-enabled", false, "allow fractional GPU requests")
	fs.BoolVar(&o.BlockNvidiaVisibleDevices, "block-nvidia-visible-devices", false, "load the deviceaccess plugin")
	fs.StringVar(&o.RuntimeClassName, "gpu-fraction-runtime-class-name", "nvidia", "runtimeClassName given to fraction pods that set none")
	fs.StringVar(&so.CertDir, "cert-dir", filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"), "folder with tls.crt and tls.key")
	fs.BoolVar(&hamiCore, "hami-core-enabled", false, "not supported by the stand-in; refused when true")
	fs.BoolVar(&fakeGPUNodes, "fake-gpu-nodes", false, "accepted and unused, as in KAI")
	if err := fs.Parse(args); err != nil {
		return err
	}
	common.Start("admission")
	if hamiCore {
		return fmt.Errorf("--hami-core-enabled is not reproduced by the stand-in (CONTRACT.md)")
	}
	var err error
	if so.Port, err = boot.Port(webhookAddr); err != nil {
		return fmt.Errorf("--webhook-addr: %w", err)
	}
	cfg, err := common.RestConfig()
	if err != nil {
		return err
	}
	return Run(ctrl.SetupSignalHandler(), cfg, o, so)
}

// Run serves the pod webhooks and the topology webhook and blocks until ctx ends. It binds every interface, as
// KAI's webhook server does.
func Run(ctx context.Context, cfg *rest.Config, o Options, so ServerOptions) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 boot.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: so.MetricsAddr},
		HealthProbeBindAddress: so.ProbeAddr,
		WebhookServer:          webhook.NewServer(webhook.Options{Port: so.Port, CertDir: so.CertDir}),
		Controller:             config.Controller{SkipNameValidation: &so.SkipNameValidation},
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}
	// The manager runs its webhook server only once asked for it.
	srv := mgr.GetWebhookServer()
	m, v := Handlers(NewPlugins(o))
	srv.Register(MutatePath, &webhook.Admission{Handler: m})
	srv.Register(ValidatePath, &webhook.Admission{Handler: v})
	srv.Register(TopologyPath, &webhook.Admission{Handler: TopologyHandler()})
	if err := mgr.AddHealthzCheck("healthz", srv.StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", srv.StartedChecker()); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting manager", "webhookPort", so.Port, "certDir", so.CertDir,
		"gpuSharing", o.GPUSharingEnabled, "blockNvidiaVisibleDevices", o.BlockNvidiaVisibleDevices,
		"runtimeClassName", o.RuntimeClassName)
	return mgr.Start(ctx)
}
