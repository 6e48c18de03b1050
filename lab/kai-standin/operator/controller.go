package operator

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"kaiops.dev/lab/kai-standin/internal/boot"
)

var (
	ConfigGVK = schema.GroupVersionKind{Group: "kai.scheduler", Version: "v1", Kind: "Config"}
	ShardGVK  = schema.GroupVersionKind{Group: "kai.scheduler", Version: "v1", Kind: "SchedulingShard"}
)

// FieldOwner is the server-side-apply manager of every object the operator writes.
const FieldOwner = "kai-operator"

// releaseAnnotations are copied from kai-config onto what it owns: the collection finds
// KAI's objects by the helm release that put kai-config there.
var releaseAnnotations = []string{"meta.helm.sh/release-name", "meta.helm.sh/release-namespace"}

// Reconciler turns Config kai-config and the SchedulingShards into KAI's components.
type Reconciler struct {
	Client    client.Client
	Fallbacks Fallbacks
	Now       func() time.Time
}

func newConfig() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ConfigGVK)
	return u
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	if req.Name != ConfigName {
		log.Info("Config is not in the singleton name, ignoring it.", "name", req.Name)
		return ctrl.Result{}, nil
	}
	cfg := newConfig()
	if err := r.Client.Get(ctx, types.NamespacedName{Name: ConfigName}, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cfg.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil // the garbage collector removes what it owns
	}
	raw, _ := json.Marshal(cfg.Object["spec"])
	spec, err := ParseSpec(raw, r.Fallbacks)
	obs := Observation{Generation: cfg.GetGeneration()}
	if err != nil {
		obs.ApplyErr = err
		return ctrl.Result{}, r.setStatus(ctx, cfg, Conditions(obs))
	}
	shards, err := r.shards(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs.Wanted = DeploymentNames(spec, shards)
	applied := map[string]int64{}
	obs.ApplyErr = r.apply(ctx, cfg, spec, shards, applied)
	obs.Deployments = map[string]*appsv1.Deployment{}
	for _, name := range obs.Wanted {
		d := &appsv1.Deployment{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: spec.Namespace, Name: name}, d); err == nil {
			// the cache may not have seen this reconcile's own write yet: a Deployment is
			// judged at the generation the apply returned, never an older one
			if d.Generation < applied[name] {
				d.Generation = applied[name]
			}
			obs.Deployments[name] = d
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	conds := Conditions(obs)
	if err := r.setStatus(ctx, cfg, conds); err != nil {
		return ctrl.Result{}, err
	}
	if obs.ApplyErr != nil {
		log.Error(obs.ApplyErr, "reconcile failed; retrying")
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) shards(ctx context.Context) ([]Shard, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ShardGVK.GroupVersion().WithKind("SchedulingShardList"))
	if err := r.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("failed to list SchedulingShards: %w", err)
	}
	var out []Shard
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		v, _, _ := unstructured.NestedString(item.Object, "spec", "partitionLabelValue")
		out = append(out, Shard{Name: item.GetName(), PartitionLabelValue: v})
	}
	return out, nil
}

func (r *Reconciler) fakeGPUNodes(ctx context.Context) (bool, error) {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.MatchingLabels{"run.ai/fake.gpu": "true"}); err != nil {
		return false, fmt.Errorf("failed to list nodes: %w", err)
	}
	return len(nodes.Items) > 0, nil
}

func (r *Reconciler) owner(cfg *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: ConfigGVK.GroupVersion().String(), Kind: ConfigGVK.Kind, Name: cfg.GetName(), UID: cfg.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// servingCert returns one webhook Service's kept certificate, or makes and stores a new
// one when its Secret is missing or no longer usable.
func (r *Reconciler) servingCert(ctx context.Context, cfg *unstructured.Unstructured, spec Spec, in Inputs, ws WebhookService) (ServingCert, error) {
	sec := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: spec.Namespace, Name: ws.Secret}, sec)
	if err != nil && !apierrors.IsNotFound(err) {
		return ServingCert{}, err
	}
	kept := ServingCert{Cert: sec.Data["tls.crt"], Key: sec.Data["tls.key"], CA: sec.Data["ca.crt"]}
	if err == nil && kept.Usable(ws.Service, spec.Namespace, r.Now()) {
		return kept, nil
	}
	fresh, err := NewServingCert(ws.Service, spec.Namespace, r.Now())
	if err != nil {
		return ServingCert{}, err
	}
	out := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: spec.meta(ws.Secret, spec.Namespace, ws.Secret, in), // KAI labels it app: <its own name>
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": fresh.Cert, "tls.key": fresh.Key, "ca.crt": fresh.CA},
	}
	if _, err := r.applyOne(ctx, cfg, out); err != nil {
		return ServingCert{}, err
	}
	logf.FromContext(ctx).Info("generated a webhook serving certificate", "service", ws.Service, "secret", ws.Secret)
	return fresh, nil
}

// apply writes every desired object; applied gets each Deployment's generation as the
// API server returned it.
func (r *Reconciler) apply(ctx context.Context, cfg *unstructured.Unstructured, spec Spec, shards []Shard, applied map[string]int64) error {
	in := Inputs{Shards: shards, Annotations: map[string]string{}}
	for _, k := range releaseAnnotations {
		if v, ok := cfg.GetAnnotations()[k]; ok {
			in.Annotations[k] = v
		}
	}
	var err error
	if in.FakeGPUNodes, err = r.fakeGPUNodes(ctx); err != nil {
		return err
	}
	in.Certs = map[string]Cert{}
	for _, ws := range WebhookServices {
		cert, err := r.servingCert(ctx, cfg, spec, in, ws)
		if err != nil {
			return err
		}
		in.Certs[ws.Service] = Cert{CABundle: cert.CA, Hash: cert.Hash()}
	}
	desired := Render(spec, in)
	var errs []error
	keep := map[string]bool{}
	for _, obj := range desired {
		keep[obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName()] = true
		u, err := r.applyOne(ctx, cfg, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if u.GetKind() == "Deployment" {
			applied[u.GetName()] = u.GetGeneration()
		}
	}
	if err := r.prune(ctx, cfg, spec, keep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// applyOne server-side-applies one object with kai-config as its controlling owner and
// returns it as the API server stored it.
func (r *Reconciler) applyOne(ctx context.Context, cfg *unstructured.Unstructured, obj client.Object) (*unstructured.Unstructured, error) {
	obj.SetOwnerReferences([]metav1.OwnerReference{r.owner(cfg)})
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to convert %s: %w", obj.GetName(), err)
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: m}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("failed to apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return u, nil
}

// prune deletes Deployments and Services kai-config owns that the spec no longer calls
// for (a removed SchedulingShard's scheduler).
func (r *Reconciler) prune(ctx context.Context, cfg *unstructured.Unstructured, spec Spec, keep map[string]bool) error {
	sel := client.MatchingLabels{ManagedByLabel: ManagedBy}
	ns := client.InNamespace(spec.Namespace)
	var owned []client.Object
	deps := &appsv1.DeploymentList{}
	if err := r.Client.List(ctx, deps, ns, sel); err != nil {
		return err
	}
	for i := range deps.Items {
		deps.Items[i].Kind = "Deployment"
		owned = append(owned, &deps.Items[i])
	}
	svcs := &corev1.ServiceList{}
	if err := r.Client.List(ctx, svcs, ns, sel); err != nil {
		return err
	}
	for i := range svcs.Items {
		svcs.Items[i].Kind = "Service"
		owned = append(owned, &svcs.Items[i])
	}
	for _, obj := range owned {
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.UID != cfg.GetUID() || keep[obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName()] {
			continue
		}
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

func (r *Reconciler) setStatus(ctx context.Context, cfg *unstructured.Unstructured, next []metav1.Condition) error {
	var current []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(cfg.Object, "status", "conditions"); ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &current)
	}
	merged, changed := Merge(current, next)
	if !changed {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": merged}})
	patch := client.RawPatch(types.MergePatchType, body)
	if err := r.Client.Status().Patch(ctx, cfg, patch); err != nil {
		return fmt.Errorf("failed to write Config %s status: %w", ConfigName, err)
	}
	return nil
}

// ShardReconciler plays what shows of KAI's schedulingshard controller: every
// SchedulingShard event first reads Config kai-config, and without it the reconcile logs
// "Failed to get the singleton KAI Config instance" and fails, so controller-runtime
// logs the Reconciler error (`Config.kai.scheduler "kai-config" not found`) and retries
// with backoff, while no component is made (KAI #1751). With kai-config there, the
// Reconciler above makes each shard's scheduler.
type ShardReconciler struct {
	Client client.Client
}

func (r *ShardReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	log.Info("Received an event to reconcile: ", "req", req)
	shard := &unstructured.Unstructured{}
	shard.SetGroupVersionKind(ShardGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, shard); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: ConfigName}, newConfig()); err != nil {
		log.Info("Failed to get the singleton KAI Config instance")
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// Main runs `kai-standin operator`.
func Main(args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	var common boot.Common
	common.Bind(fs)
	var metricsAddr, probeAddr, namespace string
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "metrics address")
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "healthz/readyz address")
	fs.StringVar(&namespace, "namespace", "kai-scheduler", "KAI's namespace when kai-config names none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	setup := common.Start("operator")
	restCfg, err := common.RestConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme: boot.Scheme(), Metrics: metricsserver.Options{BindAddress: metricsAddr}, HealthProbeBindAddress: probeAddr,
	})
	if err != nil {
		return fmt.Errorf("failed to create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	r := &Reconciler{
		Client:    mgr.GetClient(),
		Fallbacks: Fallbacks{Namespace: namespace, Repository: os.Getenv("MS_REPOSITORY"), Tag: os.Getenv("MS_TAG")},
		Now:       time.Now,
	}
	toConfig := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ConfigName}}}
	})
	shard := &unstructured.Unstructured{}
	shard.SetGroupVersionKind(ShardGVK)
	if err := ctrl.NewControllerManagedBy(mgr).Named("kai-config").
		For(newConfig()).
		Owns(&appsv1.Deployment{}).Owns(&corev1.Service{}).Owns(&corev1.Secret{}).
		Owns(&admissionv1.MutatingWebhookConfiguration{}).Owns(&admissionv1.ValidatingWebhookConfiguration{}).
		Watches(shard, toConfig).
		// --fake-gpu-nodes follows the nodes' run.ai/fake.gpu label, not their heartbeats
		Watches(&corev1.Node{}, toConfig, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("schedulingshard").For(shard.DeepCopy()).
		Complete(&ShardReconciler{Client: mgr.GetClient()}); err != nil {
		return err
	}
	setup.Info("starting manager", "msRepository", r.Fallbacks.Repository, "msTag", r.Fallbacks.Tag)
	return mgr.Start(ctrl.SetupSignalHandler())
}
