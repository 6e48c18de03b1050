package binder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
)

const (
	reservationContainer = "resource-reservation"
	reservationPrefix    = "gpu-reservation"
	// FieldNodeName indexes cached pods by node, for the per-node reservation sync.
	FieldNodeName = "spec.nodeName"
)

// ReservationPodName is deterministic per node and group, so a retry finds the pod an
// earlier attempt created.
func ReservationPodName(node, group string) string {
	sum := sha256.Sum256([]byte(node + "/" + group))
	return reservationPrefix + "-" + hex.EncodeToString(sum[:8])
}

// Reservation owns the GPU reservation pods: one per shared GPU group, holding the
// whole GPU the group's fractions share.
type Reservation struct {
	Reader  client.Reader
	Writer  client.Client
	Watcher client.WithWatch

	Namespace, ServiceAccount, AppLabel, Image, RuntimeClassName, ScaleAdjustNamespace string
	FakeGPUNodes                                                                       bool
	Timeout                                                                            time.Duration
	Resources                                                                          corev1.ResourceRequirements
	PodSecurityContext                                                                 *corev1.PodSecurityContext
	ContainerSecurityContext                                                           *corev1.SecurityContext
	// After starts the reservation timeout (Timeout); nil is the wall clock. Tests inject
	// their own, so that no case depends on how fast the machine runs.
	After func(time.Duration) <-chan time.Time

	// Stand-in faults (binder/faults.go). Duplicate: a new group's reservation pod gets
	// the pre-v0.16.0 random name and a second one is made for the same group (KAI
	// #1673). AdmissionFailure: every new reservation pod is rejected as the kubelet
	// rejects a pod it cannot give a GPU, so no device ever comes (KAI #848).
	Duplicate        bool
	AdmissionFailure bool
	// KubeletEvents records the events the kubelet would write about a pod on node.
	KubeletEvents func(node string) record.EventRecorder
	// Random is the legacy name's random part; nil is 5 characters of KAI's alphabet.
	Random func() string

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (r *Reservation) lock(group string) func() {
	r.mu.Lock()
	if r.locks == nil {
		r.locks = map[string]*sync.Mutex{}
	}
	l := r.locks[group]
	if l == nil {
		l = &sync.Mutex{}
		r.locks[group] = l
	}
	r.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// SyncNode syncs every group that a pod on node carries.
func (r *Reservation) SyncNode(ctx context.Context, node string) error {
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, client.HasLabels{api.LabelGPUGroup}, client.MatchingFields{FieldNodeName: node}); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range pods.Items {
		for _, g := range gpushare.GPUGroups(&pods.Items[i]) {
			if seen[g] {
				continue
			}
			seen[g] = true
			if err := r.SyncGroup(ctx, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// SyncAll is the startup sync: every group any pod or reservation pod carries.
func (r *Reservation) SyncAll(ctx context.Context) error {
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range pods.Items {
		for _, g := range gpushare.GPUGroups(&pods.Items[i]) {
			if !seen[g] {
				seen[g] = true
				if err := r.SyncGroup(ctx, g); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *Reservation) SyncGroup(ctx context.Context, group string) error {
	defer r.lock(group)()
	return r.syncGroupLocked(ctx, group)
}

func (r *Reservation) syncGroupLocked(ctx context.Context, group string) error {
	l := log.FromContext(ctx).WithValues("gpuGroup", group)
	var single, multi corev1.PodList
	if err := r.Reader.List(ctx, &single, client.MatchingLabels{api.LabelGPUGroup: group}); err != nil {
		return err
	}
	if err := r.Reader.List(ctx, &multi, client.MatchingLabels{api.LabelGPUGroup + "/" + group: group}); err != nil {
		return err
	}
	var reservation *corev1.Pod
	var fractions []*corev1.Pod
	seen := map[string]bool{}
	for _, list := range [][]corev1.Pod{single.Items, multi.Items} {
		for i := range list {
			p := &list[i]
			if seen[string(p.UID)] {
				continue
			}
			seen[string(p.UID)] = true
			switch {
			case p.Namespace == r.Namespace:
				reservation = p
			case p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending:
				fractions = append(fractions, p)
			}
		}
	}
	if reservation == nil && len(fractions) > 0 {
		// A running fraction with no reservation pod shares a GPU nobody holds.
		for _, p := range fractions {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			l.Info("Warning: Found pod without reservation, deleting", "namespace", p.Namespace, "name", p.Name)
			if err := r.Writer.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
	if reservation == nil || len(fractions) > 0 {
		return nil
	}
	active, err := r.activeBindRequest(ctx, group)
	if err != nil {
		return err
	}
	if active {
		l.Info("Skipping reservation pod deletion, active BindRequests exist")
		return nil
	}
	l.Info("Did not find fraction pod for gpu group, deleting reservation pod", "pod", reservation.Name)
	return r.deleteReservationPod(ctx, reservation)
}

func (r *Reservation) deleteReservationPod(ctx context.Context, pod *corev1.Pod) error {
	l := log.FromContext(ctx)
	l.Info("Deleting reservation pod", "namespace", pod.Namespace, "name", pod.Name)
	if err := r.Writer.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		if apierrors.IsNotFound(err) {
			l.Info("Reservation pod not found, skipping deletion", "namespace", pod.Namespace, "name", pod.Name)
			return nil
		}
		return err
	}
	return nil
}

// activeBindRequest: a BindRequest not yet Succeeded or Failed still needs the group.
func (r *Reservation) activeBindRequest(ctx context.Context, group string) (bool, error) {
	var brs api.BindRequestList
	if err := r.Reader.List(ctx, &brs); err != nil {
		return false, err
	}
	for _, br := range brs.Items {
		if br.Status.Phase == api.PhaseSucceeded || br.Status.Phase == api.PhaseFailed {
			continue
		}
		for _, g := range br.Spec.SelectedGPUGroups {
			if g == group {
				return true, nil
			}
		}
	}
	return false, nil
}

// Reserve returns the device id of group's GPU on node, creating the reservation pod
// if needed, and labels the fraction pod (in memory too: rollback reads it there).
func (r *Reservation) Reserve(ctx context.Context, pod *corev1.Pod, node, group string) (string, error) {
	defer r.lock(group)()
	id, err := r.deviceFor(ctx, pod, node, group)
	if err != nil {
		return "", err
	}
	return id, r.labelPod(ctx, pod, node, group)
}

func (r *Reservation) deviceFor(ctx context.Context, pod *corev1.Pod, node, group string) (string, error) {
	var existing corev1.PodList
	if err := r.Reader.List(ctx, &existing, client.InNamespace(r.Namespace), client.MatchingLabels{api.LabelGPUGroup: group}); err != nil {
		return "", err
	}
	if len(existing.Items) > 0 {
		p := &existing.Items[0]
		id := p.Annotations[api.AnnReserveForGPUIndex]
		if id == "" {
			return "", fmt.Errorf("failed to find annotation on reservation pod %s", p.Name)
		}
		return id, nil
	}
	if err := r.checkScaling(ctx); err != nil {
		return "", err
	}
	l := log.FromContext(ctx).WithValues("node", node, "gpuGroup", group)
	rp := r.reservationPod(pod, node, group)
	if r.Duplicate {
		rp.Name = legacyReservationPodName(node, r.random())
	}
	if err := r.Writer.Create(ctx, rp); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			l.Error(err, "Failed to create GPU reservation pod on node", "name", rp.Name)
			return "", err
		}
		l.Info("GPU reservation pod already exists for gpu group, reusing", "name", rp.Name)
	} else {
		l.Info("Successfully created GPU resource reservation pod", "name", rp.Name)
	}
	if r.Duplicate {
		// The bind that lost the race to the cache: it did not see rp, so it makes its own,
		// on another GPU, under the same group.
		dup := r.reservationPod(pod, node, group)
		dup.Name = legacyReservationPodName(node, r.random())
		if err := r.Writer.Create(ctx, dup); err != nil {
			l.Error(err, "Failed to create GPU reservation pod on node", "name", dup.Name)
		} else {
			l.Info("Successfully created GPU resource reservation pod", "name", dup.Name)
		}
	}
	if r.AdmissionFailure {
		return r.wait(ctx, rp, r.rejected)
	}
	return r.wait(ctx, rp, annotatedDevice)
}

func (r *Reservation) random() string {
	if r.Random != nil {
		return r.Random()
	}
	return random5()
}

// annotatedDevice is what the binder waits for: the GPU id the reservation pod's GPU side wrote.
func annotatedDevice(_ context.Context, p *corev1.Pod, _ bool) string {
	return p.Annotations[api.AnnReserveForGPUIndex]
}

// rejected is the wait of the admission-failure fault: the pod is (again) marked as the
// kubelet's rejection and no GPU id is ever accepted, so the wait ends at the timeout.
func (r *Reservation) rejected(ctx context.Context, p *corev1.Pod, first bool) string {
	if _, err := r.rejectAsKubelet(ctx, p, first); err != nil {
		log.FromContext(ctx).Error(err, "Failed to mark reservation pod as rejected", "namespace", p.Namespace, "name", p.Name)
	}
	return ""
}

// checkScaling holds new reservations while the node-scale-adjuster's scaling pods wait
// for nodes.
func (r *Reservation) checkScaling(ctx context.Context) error {
	if r.ScaleAdjustNamespace == "" {
		return nil
	}
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods, client.InNamespace(r.ScaleAdjustNamespace)); err != nil {
		return err
	}
	for _, p := range pods.Items {
		scheduled := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				scheduled = true
			}
		}
		if !scheduled {
			return errors.New("cluster is scaling up, could not create reservation pod")
		}
	}
	return nil
}

func (r *Reservation) reservationPod(pod *corev1.Pod, node, group string) *corev1.Pod {
	one := resource.MustParse("1")
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for k, v := range r.Resources.Requests {
		if k != api.ResourceGPU {
			res.Requests[k] = v
		}
	}
	for k, v := range r.Resources.Limits {
		if k != api.ResourceGPU {
			res.Limits[k] = v
		}
	}
	res.Requests[api.ResourceGPU] = one
	res.Limits[api.ResourceGPU] = one
	c := corev1.Container{
		Name:            reservationContainer,
		Image:           r.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources:       res,
		SecurityContext: r.ContainerSecurityContext,
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		},
	}
	if r.FakeGPUNodes {
		// Without NVML the reservation image would fail; the GPU id comes from the
		// fake GPU side instead.
		c.Image = "ubuntu"
		c.Args = []string{"sleep", "infinity"}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ReservationPodName(node, group),
			Namespace:   r.Namespace,
			Labels:      map[string]string{"app": r.AppLabel, api.LabelGPUGroup: group},
			Annotations: map[string]string{api.AnnDoNotDisrupt: "true"},
		},
		Spec: corev1.PodSpec{
			NodeName:           node,
			Tolerations:        append([]corev1.Toleration(nil), pod.Spec.Tolerations...),
			SecurityContext:    r.PodSecurityContext,
			ServiceAccountName: r.ServiceAccount,
			Containers:         []corev1.Container{c},
		},
	}
	if r.RuntimeClassName != "" {
		rc := r.RuntimeClassName
		p.Spec.RuntimeClassName = &rc
	}
	return p
}

// after is the reservation timeout's timer and its stop.
func (r *Reservation) after(d time.Duration) (<-chan time.Time, func()) {
	if r.After != nil {
		return r.After(d), func() {}
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// wait watches the API server (not the cache) for the reservation pod until device finds
// its GPU id (first: the pod as created, before any event); every way of giving up
// deletes the reservation pod.
func (r *Reservation) wait(ctx context.Context, rp *corev1.Pod, device func(context.Context, *corev1.Pod, bool) string) (string, error) {
	l := log.FromContext(ctx).WithValues("namespace", rp.Namespace, "name", rp.Name)
	if id := device(ctx, rp, true); id != "" {
		return id, nil
	}
	fail := func() (string, error) {
		_ = r.deleteReservationPod(ctx, rp)
		return "", fmt.Errorf("failed waiting for GPU reservation pod to allocate: %s/%s", rp.Namespace, rp.Name)
	}
	timeout, stop := r.after(r.Timeout)
	defer stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := r.Watcher.Watch(wctx, &corev1.PodList{}, &client.ListOptions{
		Namespace: rp.Namespace, FieldSelector: fields.OneTermEqualSelector("metadata.name", rp.Name),
	})
	if err != nil {
		l.Error(err, "Failed to watch GPU reservation pod")
		return fail()
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			l.Error(ctx.Err(), "Context cancelled while waiting for GPU reservation pod to be allocated")
			return fail()
		case <-timeout:
			l.Error(context.DeadlineExceeded, "Reached timeout while waiting for GPU reservation pod to be allocated")
			return fail()
		case ev, ok := <-w.ResultChan():
			if !ok {
				l.Error(errors.New("watch channel closed"), "Watch channel closed while waiting for GPU reservation pod to be allocated")
				return fail()
			}
			if ev.Type == watch.Error {
				l.Error(apierrors.FromObject(ev.Object), "Watch error while waiting for GPU reservation pod to be allocated")
				return fail()
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if id := device(ctx, p, false); id != "" {
				return id, nil
			}
		}
	}
}

func (r *Reservation) labelPod(ctx context.Context, pod *corev1.Pod, node, group string) error {
	key := api.LabelGPUGroup
	if gpushare.MultiDevice(pod) {
		key = api.LabelGPUGroup + "/" + group
	}
	if pod.Labels[key] == group {
		return nil
	}
	log.FromContext(ctx).Info("Updating GPU group annotation for pod",
		"namespace", pod.Namespace, "name", pod.Name, "node", node, "gpu-group", group)
	patch := client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, group)))
	if err := r.Writer.Patch(ctx, pod.DeepCopy(), patch); err != nil {
		_ = r.syncGroupLocked(ctx, group)
		return fmt.Errorf("failed to patch pod %s/%s with GPU group label: %w", pod.Namespace, pod.Name, err)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[key] = group
	return nil
}
