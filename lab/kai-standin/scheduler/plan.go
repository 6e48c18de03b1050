// Package scheduler is the stand-in for KAI's scheduler on the default shard: a 1 s
// cycle that turns Pending kai-scheduler pods into BindRequests, packing GPU
// fractions into shared GPU groups.
package scheduler

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/gpushare"
)

// Config mirrors the scheduler flags the plan depends on.
type Config struct {
	SchedulerName       string
	NodePoolLabelKey    string
	PartitionLabelValue string
	ReservationAppLabel string
}

// NodePool is how events and BindRequests name the shard's pool.
func (c Config) NodePool() string {
	if c.PartitionLabelValue == "" {
		return api.DefaultNodePool
	}
	return c.PartitionLabelValue
}

// Snapshot is what one cycle sees; Failed BindRequests are already gone from it.
type Snapshot struct {
	Nodes        []corev1.Node
	Pods         []corev1.Pod
	BindRequests []api.BindRequest
	PodGroups    []api.PodGroup
	Queues       []api.Queue
}

// Decision is one pod placed this cycle.
type Decision struct {
	Pod         *corev1.Pod
	PodGroup    *api.PodGroup
	BindRequest *api.BindRequest
}

// Blocked is a PodGroup the queue checks stopped: KAI's specific reason (QueueDoesNotExist,
// OverLimit), its message and, for a queue's limit, the queue's figures.
type Blocked struct {
	PodGroup *api.PodGroup
	Reason   string
	Message  string
	Details  *api.UnschedulableExplanationDetails
}

// Gated is a PodGroup with pods held by scheduling gates.
type Gated struct {
	PodGroup               *api.PodGroup
	Waiting, Exist, NGated int
}

type Plan struct {
	Decisions []Decision
	Blocked   []Blocked
	Gated     []Gated
}

// BindRequestFailed: without a backoffLimit (the scheduler never sets one) a single
// Failed status is final.
func BindRequestFailed(br *api.BindRequest) bool {
	if br.Status.Phase != api.PhaseFailed {
		return false
	}
	return br.Spec.BackoffLimit == nil || br.Status.FailedAttempts >= *br.Spec.BackoffLimit
}

type gpuGroup struct {
	id   string
	used float64
}

type nodeState struct {
	node   *corev1.Node
	total  int64
	whole  int64
	groups map[string]*gpuGroup
}

func (n *nodeState) free() int64 { return n.total - n.whole - int64(len(n.groups)) }

// portions are compared with a tolerance: 0.3+0.7 must fit in one GPU.
const eps = 1e-9

func (n *nodeState) fittingGroups(p float64, exclude map[string]bool) []*gpuGroup {
	var out []*gpuGroup
	for _, g := range n.groups {
		if !exclude[g.id] && g.used+p <= 1+eps {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].used != out[j].used {
			return out[i].used > out[j].used
		}
		return out[i].id < out[j].id
	})
	return out
}

type planner struct {
	cfg      Config
	log      logr.Logger
	newGroup func() string
	nodes    map[string]*nodeState
	names    []string
	pgs      map[string]*api.PodGroup
	queues   map[string]*api.Queue
	queueUse map[string]float64
}

func key(ns, name string) string { return ns + "/" + name }

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (p *planner) inShard(n *corev1.Node) bool {
	v, ok := n.Labels[p.cfg.NodePoolLabelKey]
	if p.cfg.PartitionLabelValue == "" {
		return !ok
	}
	return ok && v == p.cfg.PartitionLabelValue
}

// tolerated checks the taints that keep pods off a node; PreferNoSchedule only steers.
func tolerated(log logr.Logger, pod *corev1.Pod, n *corev1.Node) bool {
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(log, t, false) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (p *planner) feasible(pod *corev1.Pod) []*nodeState {
	sel := labels.SelectorFromSet(pod.Spec.NodeSelector)
	var out []*nodeState
	for _, name := range p.names {
		ns := p.nodes[name]
		n := ns.node
		why := ""
		switch {
		case !nodeReady(n):
			why = "not ready"
		case n.Spec.Unschedulable:
			why = "unschedulable"
		case !p.inShard(n):
			why = "another node pool"
		case !sel.Matches(labels.Set(n.Labels)):
			why = "nodeSelector"
		case !tolerated(p.log, pod, n):
			why = "untolerated taint"
		}
		if why != "" {
			p.log.V(2).Info("Node filtered out", "pod", pod.Namespace+"/"+pod.Name, "node", n.Name, "reason", why)
			continue
		}
		out = append(out, ns)
	}
	return out
}

func (p *planner) reservation(pod *corev1.Pod) bool {
	return pod.Labels["app"] == p.cfg.ReservationAppLabel
}

func (p *planner) queueOf(pod *corev1.Pod) string {
	pg := p.pgs[key(pod.Namespace, pod.Annotations[api.AnnPodGroupName])]
	if pg == nil {
		return ""
	}
	return pg.Spec.Queue
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// account adds a bound or binding pod to its node and queue.
func (p *planner) account(pod *corev1.Pod, node string, groups []string, portion float64) {
	ns := p.nodes[node]
	var gpus float64
	if gpushare.RequestsFraction(pod) {
		if ns != nil {
			if portion < 0 {
				portion, _ = gpushare.PodPortion(pod, ns.node)
			}
			for _, g := range groups {
				grp := ns.groups[g]
				if grp == nil {
					grp = &gpuGroup{id: g}
					ns.groups[g] = grp
				}
				grp.used += portion
			}
		}
		gpus = math.Max(portion, 0) * float64(max(len(groups), 1))
	} else {
		whole := gpushare.WholeGPUs(pod)
		if ns != nil {
			ns.whole += whole
		}
		gpus = float64(whole)
	}
	if q := p.queueOf(pod); q != "" {
		p.queueUse[q] += gpus
	}
}

// BuildPlan decides one cycle. Pure: all I/O is the caller's.
func BuildPlan(cfg Config, log logr.Logger, snap Snapshot, newGroup func() string) Plan {
	p := &planner{cfg: cfg, log: log, newGroup: newGroup, nodes: map[string]*nodeState{},
		pgs: map[string]*api.PodGroup{}, queues: map[string]*api.Queue{}, queueUse: map[string]float64{}}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		total := int64(0)
		if q, ok := n.Status.Allocatable[api.ResourceGPU]; ok {
			total = q.Value()
		}
		p.nodes[n.Name] = &nodeState{node: n, total: total, groups: map[string]*gpuGroup{}}
		p.names = append(p.names, n.Name)
	}
	sort.Strings(p.names)
	for i := range snap.PodGroups {
		pg := &snap.PodGroups[i]
		p.pgs[key(pg.Namespace, pg.Name)] = pg
	}
	for i := range snap.Queues {
		p.queues[snap.Queues[i].Name] = &snap.Queues[i]
	}
	binding := map[string]*api.BindRequest{}
	for i := range snap.BindRequests {
		br := &snap.BindRequests[i]
		if !BindRequestFailed(br) {
			binding[key(br.Namespace, br.Spec.PodName)] = br
		}
	}

	var pending []*corev1.Pod
	for i := range snap.Pods {
		pod := &snap.Pods[i]
		if terminated(pod) || p.reservation(pod) {
			continue
		}
		if pod.Spec.NodeName != "" {
			// Groups come only from pods that really sit on a node: a Pending pod
			// whose bind failed keeps a stale group label that must not be reused.
			p.account(pod, pod.Spec.NodeName, gpushare.GPUGroups(pod), -1)
			continue
		}
		if br := binding[key(pod.Namespace, pod.Name)]; br != nil && ownedBy(br, pod.UID) {
			portion := -1.0
			if br.Spec.ReceivedGPU != nil {
				if v, err := strconv.ParseFloat(br.Spec.ReceivedGPU.Portion, 64); err == nil {
					portion = v
				}
			}
			p.account(pod, br.Spec.SelectedNode, br.Spec.SelectedGPUGroups, portion)
			continue
		}
		if pod.Spec.SchedulerName == cfg.SchedulerName && pod.DeletionTimestamp == nil {
			pending = append(pending, pod)
		}
	}
	sort.SliceStable(pending, func(i, j int) bool {
		a, b := pending[i], pending[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return key(a.Namespace, a.Name) < key(b.Namespace, b.Name)
	})

	var plan Plan
	gated := map[*api.PodGroup]bool{}
	blocked := map[*api.PodGroup]bool{}
	for _, pod := range pending {
		pg := p.pgs[key(pod.Namespace, pod.Annotations[api.AnnPodGroupName])]
		if len(pod.Spec.SchedulingGates) > 0 {
			if pg != nil && !gated[pg] {
				gated[pg] = true
				plan.Gated = append(plan.Gated, p.gatedInfo(pg, snap.Pods))
			}
			continue
		}
		if pg == nil || blocked[pg] {
			continue
		}
		d, b := p.place(pod, pg)
		if b != nil {
			blocked[pg] = true
			plan.Blocked = append(plan.Blocked, *b)
		}
		if d != nil {
			plan.Decisions = append(plan.Decisions, *d)
		}
	}
	return plan
}

func ownedBy(br *api.BindRequest, uid types.UID) bool {
	for _, o := range br.OwnerReferences {
		if o.Kind == "Pod" && o.UID != uid {
			return false
		}
	}
	return true
}

func (p *planner) gatedInfo(pg *api.PodGroup, pods []corev1.Pod) Gated {
	g := Gated{PodGroup: pg, Waiting: 1}
	if pg.Spec.MinMember != nil {
		g.Waiting = int(*pg.Spec.MinMember)
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Namespace != pg.Namespace || pod.Annotations[api.AnnPodGroupName] != pg.Name || terminated(pod) {
			continue
		}
		g.Exist++
		if len(pod.Spec.SchedulingGates) > 0 {
			g.NGated++
		}
	}
	return g
}

// queueLimit returns the GPU limit, or -1 for none.
func queueLimit(q *api.Queue) float64 {
	if q.Spec.Resources == nil || q.Spec.Resources.GPU == nil || q.Spec.Resources.GPU.Limit == nil {
		return -1
	}
	return *q.Spec.Resources.GPU.Limit
}

// overLimit is KAI's limit check on GPUs: the message KAI writes and the queue's figures.
func (p *planner) overLimit(q *api.Queue, demand float64) *Blocked {
	limit := queueLimit(q)
	if limit < 0 {
		return nil
	}
	used := p.queueUse[q.Name]
	if used+demand <= limit+eps {
		return nil
	}
	details := &api.QuotaDetails{
		Name:                       q.Name,
		QueueResourceLimits:        gpuList(limit),
		QueueAllocatedResources:    gpuList(used),
		PodGroupRequestedResources: gpuList(demand),
	}
	if r := q.Spec.Resources; r != nil && r.GPU != nil && r.GPU.Quota != nil && *r.GPU.Quota >= 0 {
		details.QueueDeservedResources = gpuList(*r.GPU.Quota)
	}
	return &Blocked{
		Reason: api.ReasonOverLimit,
		Message: fmt.Sprintf("%s quota has reached the allowable limit of GPUs. "+
			"Limit is %s GPUs, currently %s GPUs allocated and workload requested %s GPUs",
			q.Name, humanize(limit), humanize(used), humanize(demand)),
		Details: &api.UnschedulableExplanationDetails{QueueDetails: details},
	}
}

// humanize writes a figure as KAI's messages do: at most three decimals, no trailing zeros.
func humanize(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	for strings.HasSuffix(s, "0") {
		s = s[:len(s)-1]
	}
	return strings.TrimSuffix(s, ".")
}

func gpuList(gpus float64) corev1.ResourceList {
	return corev1.ResourceList{api.ResourceGPU: *resource.NewMilliQuantity(int64(math.Round(gpus*1000)), resource.DecimalSI)}
}

type placement struct {
	node    *nodeState
	groups  []string
	portion float64
	kind    string
	count   int
}

func (p *planner) place(pod *corev1.Pod, pg *api.PodGroup) (*Decision, *Blocked) {
	q := p.queues[pg.Spec.Queue]
	if q == nil {
		return nil, &Blocked{PodGroup: pg, Reason: api.ReasonQueueDoesNotExist,
			Message: fmt.Sprintf("Queue '%s' does not exist", pg.Spec.Queue)}
	}
	nodes := p.feasible(pod)
	var pl *placement
	switch {
	case gpushare.RequestsFraction(pod):
		pl = p.placeFraction(pod, nodes)
	case gpushare.WholeGPUs(pod) > 0:
		pl = p.placeWhole(gpushare.WholeGPUs(pod), nodes)
	case len(nodes) > 0:
		pl = &placement{node: nodes[0], kind: api.ResourceTypeRegular}
	}
	if pl == nil {
		p.log.V(1).Info("No node fits pod", "namespace", pod.Namespace, "pod", pod.Name, "feasibleNodes", len(nodes))
		return nil, nil
	}
	demand := float64(pl.count)
	if pl.kind == api.ResourceTypeFraction {
		demand = pl.portion * float64(pl.count)
	}
	if b := p.overLimit(q, demand); b != nil {
		b.PodGroup = pg
		return nil, b
	}
	// Commit, so that later pods of this cycle see what this one took.
	for _, g := range pl.groups {
		grp := pl.node.groups[g]
		if grp == nil {
			grp = &gpuGroup{id: g}
			pl.node.groups[g] = grp
		}
		grp.used += pl.portion
	}
	if pl.kind == api.ResourceTypeRegular {
		pl.node.whole += int64(pl.count)
	}
	p.queueUse[q.Name] += demand
	return &Decision{Pod: pod, PodGroup: pg, BindRequest: p.bindRequest(pod, pl)}, nil
}

// placeFraction is binpack: the fullest existing group that still fits, anywhere;
// otherwise a whole free GPU on the node with the fewest free GPUs.
func (p *planner) placeFraction(pod *corev1.Pod, nodes []*nodeState) *placement {
	n := gpushare.NumDevices(pod)
	type option struct {
		ns      *nodeState
		portion float64
		fit     []*gpuGroup
	}
	var opts []option
	for _, ns := range nodes {
		portion, ok := gpushare.PodPortion(pod, ns.node)
		if !ok || ns.total == 0 {
			continue
		}
		fit := ns.fittingGroups(portion, nil)
		if int64(len(fit))+max(ns.free(), 0) < int64(n) {
			continue
		}
		opts = append(opts, option{ns, portion, fit})
	}
	if len(opts) == 0 {
		return nil
	}
	sort.SliceStable(opts, func(i, j int) bool {
		a, b := opts[i], opts[j]
		if (len(a.fit) > 0) != (len(b.fit) > 0) {
			return len(a.fit) > 0
		}
		if len(a.fit) > 0 && a.fit[0].used != b.fit[0].used {
			return a.fit[0].used > b.fit[0].used
		}
		return a.ns.free() < b.ns.free()
	})
	best := opts[0]
	if p.log.V(2).Enabled() {
		known := map[string]float64{}
		for id, g := range best.ns.groups {
			known[id] = g.used
		}
		p.log.V(2).Info("Fraction placement", "pod", pod.Namespace+"/"+pod.Name, "node", best.ns.node.Name, "knownGroups", known)
	}
	pl := &placement{node: best.ns, portion: best.portion, kind: api.ResourceTypeFraction, count: n}
	for _, g := range best.fit {
		if len(pl.groups) == n {
			break
		}
		pl.groups = append(pl.groups, g.id)
	}
	for len(pl.groups) < n {
		id := p.newGroup()
		pl.groups = append(pl.groups, id)
	}
	return pl
}

func (p *planner) placeWhole(count int64, nodes []*nodeState) *placement {
	var best *nodeState
	for _, ns := range nodes {
		if ns.free() < count {
			continue
		}
		if best == nil || ns.free() < best.free() {
			best = ns
		}
	}
	if best == nil {
		return nil
	}
	return &placement{node: best, kind: api.ResourceTypeRegular, count: int(count), portion: 1}
}

func (p *planner) bindRequest(pod *corev1.Pod, pl *placement) *api.BindRequest {
	lbl := map[string]string{api.LabelSelectedNode: pl.node.node.Name}
	if p.cfg.PartitionLabelValue != "" {
		lbl[p.cfg.NodePoolLabelKey] = p.cfg.PartitionLabelValue
	}
	gpu := &api.ReceivedGPU{Count: pl.count, Portion: gpushare.FormatPortion(pl.portion)}
	return &api.BindRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: api.BindRequestGV.String(), Kind: "BindRequest"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Labels:    lbl,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: api.BindRequestSpec{
			PodName:              pod.Name,
			SelectedNode:         pl.node.node.Name,
			SelectedGPUGroups:    pl.groups,
			ReceivedResourceType: pl.kind,
			ReceivedGPU:          gpu,
		},
	}
}
