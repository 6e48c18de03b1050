package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kaiops.dev/lab/kai-standin/api"
)

// Scheduler runs the cycle. Reader is the informer cache; Writer goes to the API server.
type Scheduler struct {
	Cfg      Config
	Reader   client.Reader
	Writer   client.Client
	Recorder record.EventRecorder
	Log      logr.Logger
	Metrics  *Metrics
	NewGroup func() string
	Now      func() time.Time

	// deleted holds BindRequests this process deleted that the cache may still show;
	// created holds the ones it created that the cache may not show yet. Both stop a
	// lagging cache from making the next cycle act twice.
	deleted map[types.UID]bool
	created map[types.UID]createdBR
}

type createdBR struct {
	br *api.BindRequest
	at time.Time
}

func (s *Scheduler) init() {
	if s.deleted == nil {
		s.deleted = map[types.UID]bool{}
		s.created = map[types.UID]createdBR{}
	}
	if s.NewGroup == nil {
		s.NewGroup = func() string { return uuid.New().String() }
	}
	if s.Now == nil {
		s.Now = time.Now
	}
}

// Run cycles every period until ctx ends.
func (s *Scheduler) Run(ctx context.Context, period time.Duration) error {
	s.init()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		start := s.Now()
		if err := s.Cycle(ctx); err != nil {
			s.Log.Error(err, "Scheduling cycle failed")
		}
		if s.Metrics != nil {
			s.Metrics.E2E.Observe(ms(s.Now().Sub(start)))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Cycle is one snapshot, plan and commit.
func (s *Scheduler) Cycle(ctx context.Context) error {
	s.init()
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	plan := BuildPlan(s.Cfg, s.Log, snap, s.NewGroup)
	for _, g := range plan.NotReady {
		s.Recorder.Eventf(g.PodGroup, corev1.EventTypeNormal, "NotReady",
			"Job is not ready for scheduling. Waiting for %d pods, currently %d exist, %d are gated",
			g.Waiting, g.Exist, g.NGated)
	}
	for _, b := range plan.Blocked {
		s.setCondition(ctx, b)
	}
	for _, d := range plan.Decisions {
		s.bind(ctx, d)
	}
	return nil
}

// snapshot deletes the failed BindRequests first and waits for the deletes, so that
// their pods are Pending again in this very cycle.
func (s *Scheduler) snapshot(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	var nodes corev1.NodeList
	if err := s.Reader.List(ctx, &nodes); err != nil {
		return snap, fmt.Errorf("failed to list nodes: %w", err)
	}
	snap.Nodes = nodes.Items
	exists := map[string]bool{}
	for _, n := range nodes.Items {
		exists[n.Name] = true
	}
	var brs api.BindRequestList
	if err := s.Reader.List(ctx, &brs); err != nil {
		return snap, fmt.Errorf("failed to list bindrequests: %w", err)
	}
	seen := map[types.UID]bool{}
	var doomed []api.BindRequest
	for _, br := range brs.Items {
		seen[br.UID] = true
		if s.deleted[br.UID] {
			continue
		}
		if BindRequestFailed(&br) || !exists[br.Spec.SelectedNode] {
			doomed = append(doomed, br)
			continue
		}
		snap.BindRequests = append(snap.BindRequests, br)
	}
	for uid := range s.deleted {
		if !seen[uid] {
			delete(s.deleted, uid)
		}
	}
	s.deleteAll(ctx, doomed)

	var pods corev1.PodList
	if err := s.Reader.List(ctx, &pods); err != nil {
		return snap, fmt.Errorf("failed to list pods: %w", err)
	}
	snap.Pods = pods.Items
	podUIDs := map[types.UID]bool{}
	for _, p := range pods.Items {
		podUIDs[p.UID] = true
	}
	now := s.Now()
	for uid, c := range s.created {
		podUID := c.br.OwnerReferences[0].UID
		if seen[uid] || !podUIDs[podUID] || now.Sub(c.at) > time.Minute {
			delete(s.created, uid)
			continue
		}
		snap.BindRequests = append(snap.BindRequests, *c.br)
	}
	var pgs api.PodGroupList
	if err := s.Reader.List(ctx, &pgs); err != nil {
		return snap, fmt.Errorf("failed to list podgroups: %w", err)
	}
	snap.PodGroups = pgs.Items
	var queues api.QueueList
	if err := s.Reader.List(ctx, &queues); err != nil {
		return snap, fmt.Errorf("failed to list queues: %w", err)
	}
	snap.Queues = queues.Items
	return snap, nil
}

// deleteAll pins each delete to the UID it judged, because a new BindRequest of the
// same name may already exist.
func (s *Scheduler) deleteAll(ctx context.Context, doomed []api.BindRequest) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range doomed {
		br := &doomed[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid := br.UID
			err := s.Writer.Delete(ctx, br, client.Preconditions{UID: &uid})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				s.Log.Error(err, "Failed to delete BindRequest", "namespace", br.Namespace, "name", br.Name)
				return
			}
			s.Log.V(1).Info("Deleted BindRequest", "namespace", br.Namespace, "name", br.Name,
				"phase", br.Status.Phase, "node", br.Spec.SelectedNode)
			mu.Lock()
			s.deleted[uid] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
}

func (s *Scheduler) bind(ctx context.Context, d Decision) {
	pod, br := d.Pod, d.BindRequest
	node := br.Spec.SelectedNode
	if s.Metrics != nil {
		s.Metrics.TaskScheduling.Observe(ms(s.Now().Sub(pod.CreationTimestamp.Time)))
	}
	start := s.Now()
	err := s.Writer.Create(ctx, br)
	if s.Metrics != nil {
		s.Metrics.BindLatency.Observe(ms(s.Now().Sub(start)))
	}
	if err != nil {
		s.Log.Error(err, "Failed to create BindRequest", "namespace", pod.Namespace, "pod", pod.Name, "node", node)
		s.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedBinding", "Failed to bind pod %s/%s to node %s. %v",
			pod.Namespace, pod.Name, node, err)
		s.podScheduledFalse(ctx, pod, err.Error())
		return
	}
	s.created[br.UID] = createdBR{br: br.DeepCopy(), at: s.Now()}
	s.Log.Info("Created BindRequest", "namespace", pod.Namespace, "pod", pod.Name, "node", node,
		"resourceType", br.Spec.ReceivedResourceType, "gpuGroups", br.Spec.SelectedGPUGroups)
	s.Recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned pod %s/%s to node %s at node-pool %s",
		pod.Namespace, pod.Name, node, s.Cfg.NodePool())
	s.markStarted(ctx, d.PodGroup)
}

func (s *Scheduler) podScheduledFalse(ctx context.Context, pod *corev1.Pod, msg string) {
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "BindingError", Message: msg,
		LastTransitionTime: metav1.NewTime(s.Now()),
	}}}})
	if err := s.Writer.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		s.Log.Error(err, "Failed to update pod condition", "namespace", pod.Namespace, "pod", pod.Name)
	}
}

// markStarted stamps the PodGroup and drops its queue conditions: it schedules now.
func (s *Scheduler) markStarted(ctx context.Context, pg *api.PodGroup) {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		api.AnnLastStartTimestamp: s.Now().UTC().Format(time.RFC3339),
	}}})
	if err := s.Writer.Patch(ctx, pg, client.RawPatch(types.MergePatchType, body)); err != nil {
		s.Log.Error(err, "Failed to annotate PodGroup", "namespace", pg.Namespace, "podGroup", pg.Name)
	}
	kept, changed := s.withoutPoolConditions(pg)
	if changed {
		s.patchConditions(ctx, pg, kept)
	}
}

func (s *Scheduler) withoutPoolConditions(pg *api.PodGroup) ([]api.SchedulingCondition, bool) {
	kept := []api.SchedulingCondition{}
	changed := false
	for _, c := range pg.Status.SchedulingConditions {
		if c.Type == api.CondUnschedulableOnNodePool && (c.NodePool == "" || c.NodePool == s.Cfg.NodePool()) {
			changed = true
			continue
		}
		kept = append(kept, c)
	}
	return kept, changed
}

// setCondition writes KAI's condition for a blocked PodGroup: reason Unschedulable, the
// message "<reason>: <message>." and the structured reasons[]; unchanged, it is left alone.
func (s *Scheduler) setCondition(ctx context.Context, b Blocked) {
	pg := b.PodGroup
	msg := fmt.Sprintf("%s: %s.", b.Reason, b.Message)
	for _, c := range pg.Status.SchedulingConditions {
		if c.Type == api.CondUnschedulableOnNodePool && c.NodePool == s.Cfg.NodePool() && c.Reason == api.ReasonUnschedulable && c.Message == msg {
			return
		}
	}
	kept, _ := s.withoutPoolConditions(pg)
	kept = append(kept, api.SchedulingCondition{
		Type: api.CondUnschedulableOnNodePool, NodePool: s.Cfg.NodePool(), Reason: api.ReasonUnschedulable, Message: msg,
		Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.Now()),
		TransitionID: fmt.Sprint(len(pg.Status.SchedulingConditions)),
		Reasons:      []api.UnschedulableExplanation{{Reason: b.Reason, Message: b.Message, Details: b.Details}},
	})
	s.Log.Info("PodGroup cannot be scheduled", "namespace", pg.Namespace, "podGroup", pg.Name, "reason", b.Reason, "message", msg)
	s.patchConditions(ctx, pg, kept)
}

func (s *Scheduler) patchConditions(ctx context.Context, pg *api.PodGroup, conds []api.SchedulingCondition) {
	body, _ := json.Marshal(map[string]any{"status": map[string]any{"schedulingConditions": conds}})
	if err := s.Writer.Status().Patch(ctx, pg, client.RawPatch(types.MergePatchType, body)); err != nil {
		s.Log.Error(err, "Failed to update PodGroup scheduling conditions", "namespace", pg.Namespace, "podGroup", pg.Name)
	}
}
