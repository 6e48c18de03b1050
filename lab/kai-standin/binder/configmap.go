package binder

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
)

// ConfigMapWrite selects how PreBind writes the capabilities ConfigMap: the three
// behaviours of meta/kai_releases.yml.
type ConfigMapWrite string

const (
	EmptyMap         ConfigMapWrite = "empty-map"
	RaceFixUnguarded ConfigMapWrite = "race-fix-unguarded"
	RaceFixGuarded   ConfigMapWrite = "race-fix-guarded"
)

func ParseConfigMapWrite(v string) (ConfigMapWrite, error) {
	switch w := ConfigMapWrite(v); w {
	case EmptyMap, RaceFixUnguarded, RaceFixGuarded:
		return w, nil
	}
	return "", fmt.Errorf("unknown ConfigMap-write behaviour %q (want %s, %s or %s)", v, EmptyMap, RaceFixUnguarded, RaceFixGuarded)
}

// GPUSharing is the binder's gpusharing plugin. Reader must be the informer cache: the
// re-reads of the empty-map behaviour are racy on the real system exactly because of
// it (KAI issue 2016).
type GPUSharing struct {
	Reader     client.Reader
	Writer     client.Client
	Write      ConfigMapWrite
	CDIEnabled bool
}

func (g *GPUSharing) Name() string { return "gpusharing" }

func podOwner(pod *corev1.Pod) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
}

func (g *GPUSharing) names(pod *corev1.Pod, ref gpushare.ContainerRef) (string, string, error) {
	prefix, err := gpushare.Prefix(pod)
	if err != nil {
		return "", "", err
	}
	c := gpushare.CapabilitiesName(prefix, ref)
	return c, gpushare.EnvConfigMapName(c), nil
}

func (g *GPUSharing) PreBind(ctx context.Context, pod *corev1.Pod, br *api.BindRequest, devices []string) error {
	if br.Spec.ReceivedResourceType != api.ResourceTypeFraction {
		return nil
	}
	ids := devices
	if g.CDIEnabled {
		ids = make([]string, len(devices))
		for i, d := range devices {
			ids[i] = "k8s.device-plugin.nvidia.com/gpu=" + d
		}
	}
	visible := strings.Join(ids, ",")
	ref, err := gpushare.FractionContainer(pod)
	if err != nil {
		return fmt.Errorf("failed to get fraction container ref: %w", err)
	}
	if g.Write == EmptyMap {
		return g.preBindEmptyMap(ctx, pod, br, ref, visible)
	}
	return g.preBindRaceFix(ctx, pod, br, ref, visible)
}

func setVisible(visible string) func(map[string]string) {
	return func(d map[string]string) {
		d[gpushare.EnvVisibleDevices] = visible
		if _, ok := d[gpushare.KeyRunaiVisibleDevices]; ok {
			d[gpushare.KeyRunaiVisibleDevices] = visible
		}
	}
}

// portion dereferences ReceivedGPU unchecked: a BindRequest without it panics here, as
// it does in KAI, and the reconcile turns that into "Internal Error: ...".
func setPortion(br *api.BindRequest) func(map[string]string) {
	return func(d map[string]string) {
		d[gpushare.EnvNumOfGPUs] = br.Spec.ReceivedGPU.Portion
		d[gpushare.EnvGPUPortion] = br.Spec.ReceivedGPU.Portion
	}
}

// preBindEmptyMap is the BASE order: both ConfigMaps created empty, then filled through
// cached re-reads of objects created milliseconds before.
func (g *GPUSharing) preBindEmptyMap(ctx context.Context, pod *corev1.Pod, br *api.BindRequest, ref gpushare.ContainerRef, visible string) error {
	capName, envName, err := g.names(pod, ref)
	if err != nil {
		return fmt.Errorf("failed to create capabilities configmap: %w", err)
	}
	if err := g.upsert(ctx, pod, capName, map[string]string{}); err != nil {
		return fmt.Errorf("failed to create capabilities configmap: %w", err)
	}
	if err := g.upsert(ctx, pod, envName, map[string]string{}); err != nil {
		return fmt.Errorf("failed to create env configmap: %w", err)
	}
	target := envName
	if gpushare.VisibleDevicesFromConfigMap(ref.Container(pod)) {
		target = capName
	}
	if err := g.updateKeys(ctx, pod, target, setVisible(visible)); err != nil {
		return fmt.Errorf("failed to update gpu sharing configmap %s for pod %s/%s: %w", target, pod.Namespace, pod.Name, err)
	}
	if err := g.updateKeys(ctx, pod, capName, setPortion(br)); err != nil {
		return fmt.Errorf("failed to update GPU_PORTION value in gpu sharing configmap for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// preBindRaceFix is PR 2028: -evar first, then one upsert of the capabilities
// ConfigMap with all three keys, whose error is returned as is.
func (g *GPUSharing) preBindRaceFix(ctx context.Context, pod *corev1.Pod, br *api.BindRequest, ref gpushare.ContainerRef, visible string) error {
	_, envName, err := g.names(pod, ref)
	if err != nil {
		return fmt.Errorf("failed to create env configmap: %w", err)
	}
	if err := g.upsert(ctx, pod, envName, map[string]string{}); err != nil {
		return fmt.Errorf("failed to create env configmap: %w", err)
	}
	if gpushare.VisibleDevicesFromConfigMap(ref.Container(pod)) {
		capName, _, err := g.names(pod, ref)
		if err != nil {
			return fmt.Errorf("failed to get capabilities configmap name: %w", err)
		}
		data := map[string]string{}
		setVisible(visible)(data)
		setPortion(br)(data)
		return g.upsert(ctx, pod, capName, data)
	}
	// Pods admitted before the ConfigMap-key env existed: the BASE path, still racy.
	capName, _, _ := g.names(pod, ref)
	if err := g.upsert(ctx, pod, capName, map[string]string{}); err != nil {
		return fmt.Errorf("failed to create capabilities configmap: %w", err)
	}
	if err := g.updateKeys(ctx, pod, envName, setVisible(visible)); err != nil {
		return fmt.Errorf("failed to update gpu sharing configmap %s for pod %s/%s: %w", envName, pod.Namespace, pod.Name, err)
	}
	if err := g.updateKeys(ctx, pod, capName, setPortion(br)); err != nil {
		return fmt.Errorf("failed to update GPU_PORTION value in gpu sharing configmap for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// upsert creates the ConfigMap or patches the existing one. An AlreadyExists on create
// is an error, as in every KAI version.
func (g *GPUSharing) upsert(ctx context.Context, pod *corev1.Pod, name string, data map[string]string) error {
	l := log.FromContext(ctx)
	desired := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace, OwnerReferences: podOwner(pod)},
		Data:       data,
	}
	existing := &corev1.ConfigMap{}
	err := g.Reader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) {
		if err := g.Writer.Create(ctx, desired); err != nil {
			return fmt.Errorf("failed to create configmap %s/%s for pod %s/%s, error: %w", pod.Namespace, name, pod.Namespace, pod.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to check if configmap %s/%s exists for pod %s/%s, error: %w", pod.Namespace, name, pod.Namespace, pod.Name, err)
	}
	l.Info("Existing configmap was found for pod", "namespace", pod.Namespace, "name", pod.Name, "configMapName", name)
	if err := g.patchExisting(ctx, l, existing, desired); err != nil {
		return fmt.Errorf("failed to patch configmap for pod %s/%s, error: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (g *GPUSharing) patchExisting(ctx context.Context, l logr.Logger, existing, desired *corev1.ConfigMap) error {
	updated := existing.DeepCopy()
	if !reflect.DeepEqual(existing.OwnerReferences, desired.OwnerReferences) {
		// Another owner's ConfigMap is taken over whole: keys it had that we do not
		// write are lost, as in KAI.
		l.Info("Going to override configmap, different owner", "configMapName", existing.Name)
		updated.OwnerReferences = desired.OwnerReferences
		updated.Data = desired.Data
	} else {
		l.Info("Configmap owner identical to existing configmap, updating data", "configMapName", existing.Name)
		if g.Write == RaceFixGuarded && updated.Data == nil {
			updated.Data = map[string]string{}
		}
		// Without the guard this writes into a nil map when the existing ConfigMap has
		// no data, and the Go runtime panics: the defect the stand-in must reproduce.
		for k, v := range desired.Data {
			if v != "" {
				updated.Data[k] = v
			}
		}
	}
	if err := g.Writer.Patch(ctx, updated, client.MergeFrom(existing)); err != nil {
		return fmt.Errorf("failed to patch existing configmap %s/%s, error: %w", existing.Namespace, existing.Name, err)
	}
	l.Info("Successfully patched configmap", "configMapName", existing.Name)
	return nil
}

// updateKeys is the cached read-modify-patch the empty-map behaviour depends on.
func (g *GPUSharing) updateKeys(ctx context.Context, pod *corev1.Pod, name string, set func(map[string]string)) error {
	l := log.FromContext(ctx)
	l.Info("Updating config map for job", "namespace", pod.Namespace, "name", pod.Name, "configMapName", name)
	cm := &corev1.ConfigMap{}
	if err := g.Reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, cm); err != nil {
		l.Error(err, "failed to get configMap", "configMapName", name)
		return err
	}
	updated := cm.DeepCopy()
	if updated.Data == nil {
		updated.Data = map[string]string{}
	}
	set(updated.Data)
	if err := g.Writer.Patch(ctx, updated, client.MergeFrom(cm)); err != nil {
		l.Error(err, "failed to update config map", "configMapName", name)
		return err
	}
	return nil
}

// Rollback deletes both ConfigMaps, even ones that existed before the attempt.
func (g *GPUSharing) Rollback(ctx context.Context, pod *corev1.Pod, br *api.BindRequest) error {
	if br.Spec.ReceivedResourceType != api.ResourceTypeFraction {
		return nil
	}
	l := log.FromContext(ctx)
	ref, err := gpushare.FractionContainer(pod)
	if err != nil {
		l.V(1).Info("No fraction container, skipping ConfigMap rollback", "error", err.Error())
		return nil
	}
	capName, envName, err := g.names(pod, ref)
	if err != nil {
		l.V(1).Info("No ConfigMap name, skipping ConfigMap rollback", "error", err.Error())
		return nil
	}
	var errs []error
	for _, n := range []string{capName, envName} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: pod.Namespace}}
		if err := g.Writer.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete configmap %s/%s: %w", pod.Namespace, n, err))
		}
	}
	return joinErrs(errs)
}
