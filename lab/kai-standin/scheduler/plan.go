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
	// Stand-in faults (package faults), off unless --standin-faults names them:
	// GangBroken never schedules a PodGroup with minMember > 1 (NVIDIA/aicr #2636);
	// BurstOverpack does not count this cycle's fraction placements, so a burst piles
	// onto one GPU past 1.0 (KAI #2153).
	GangBroken    bool
	BurstOverpack bool
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

// Blocked is a PodGroup the scheduler could not place: KAI's specific reason
// (QueueDoesNotExist, OverLimit, PodSchedulingErrors for a gang that does not fit), its
// message and, for a queue's limit, the queue's figures.
type Blocked struct {
	PodGroup *api.PodGroup
	Reason   string
	Message  string
	Details  *api.UnschedulableExplanationDetails
}

// NotReady is a PodGroup KAI holds as not ready for scheduling: fewer pods that could
// run (alive, not gated) than its minMember.
type NotReady struct {
	PodGroup               *api.PodGroup
	Waiting, Exist, NGated int
}

type Plan struct {
	Decisions []Decision
	Blocked   []Blocked
	NotReady  []NotReady
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
	// active counts each PodGroup's pods that hold their place: on a node, or binding.
	active map[*api.PodGroup]int
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

// account adds a bound or binding pod to its node, its queue and its PodGroup.
func (p *planner) account(pod *corev1.Pod, node string, groups []string, portion float64) {
	if pg := p.pgs[key(pod.Namespace, pod.Annotations[api.AnnPodGroupName])]; pg != nil {
		p.active[pg]++
	}
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
		pgs: map[string]*api.PodGroup{}, queues: map[string]*api.Queue{}, queueUse: map[string]float64{},
		active: map[*api.PodGroup]int{}}
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

	// KAI schedules jobs, not pods: each PodGroup's pending pods are taken together, at
	// the place of its first one.
	var order []*api.PodGroup
	jobs := map[*api.PodGroup][]*corev1.Pod{}
	for _, pod := range pending {
		pg := p.pgs[key(pod.Namespace, pod.Annotations[api.AnnPodGroupName])]
		if pg == nil {
			continue
		}
		if _, seen := jobs[pg]; !seen {
			order = append(order, pg)
		}
		jobs[pg] = append(jobs[pg], pod)
	}
	var plan Plan
	for _, pg := range order {
		p.schedule(pg, jobs[pg], snap.Pods, &plan)
	}
	return plan
}

// minMember is the PodGroup's gang size; unset is 1.
func minMember(pg *api.PodGroup) int {
	if pg.Spec.MinMember == nil || *pg.Spec.MinMember < 1 {
		return 1
	}
	return int(*pg.Spec.MinMember)
}

// schedule is one PodGroup's turn. A group with fewer pods that could run than its
// minMember is not ready (KAI's NotReady event). A gang (minMember > 1) whose placed
// pods do not reach minMember is all or nothing: the pods still needed are placed
// together in this cycle, GPU fractions included, or none is; then any further pod is
// placed on its own, as every pod of a group with minMember 1 is.
func (p *planner) schedule(pg *api.PodGroup, pods []*corev1.Pod, all []corev1.Pod, plan *Plan) {
	size := minMember(pg)
	info := p.notReady(pg, all, size)
	if info.Exist-info.NGated < size {
		plan.NotReady = append(plan.NotReady, info)
		return
	}
	var ready []*corev1.Pod
	for _, pod := range pods {
		if len(pod.Spec.SchedulingGates) == 0 {
			ready = append(ready, pod)
		}
	}
	if size > 1 && p.cfg.GangBroken {
		p.log.V(1).Info("Stand-in fault gang-broken: a PodGroup with minMember > 1 is never scheduled",
			"namespace", pg.Namespace, "podGroup", pg.Name, "minMember", size)
		return
	}
	active := p.active[pg]
	placed := 0
	var blocked *Blocked
	if needed := size - active; size > 1 && needed > 0 {
		n := min(needed, len(ready))
		ds, b := p.placeGang(pg, ready[:n], size, needed)
		ready = ready[n:]
		blocked = b
		plan.Decisions = append(plan.Decisions, ds...)
		placed += len(ds)
		if ds == nil {
			ready = nil
		}
	}
	for _, pod := range ready {
		if blocked != nil {
			break
		}
		d, b := p.place(pod, pg)
		blocked = b
		if d != nil {
			plan.Decisions = append(plan.Decisions, *d)
			placed++
		}
	}
	if blocked == nil {
		return
	}
	// KAI leaves the condition alone while the group has pods allocated.
	if active > 0 || placed > 0 {
		p.log.V(1).Info("PodGroup cannot be scheduled further", "namespace", pg.Namespace, "podGroup", pg.Name,
			"reason", blocked.Reason, "message", blocked.Message)
		return
	}
	plan.Blocked = append(plan.Blocked, *blocked)
}

func ownedBy(br *api.BindRequest, uid types.UID) bool {
	for _, o := range br.OwnerReferences {
		if o.Kind == "Pod" && o.UID != uid {
			return false
		}
	}
	return true
}

// notReady counts the group's pods as KAI does for its readiness: alive (not
// terminated, wherever they are) and, of those, gated.
func (p *planner) notReady(pg *api.PodGroup, pods []corev1.Pod, size int) NotReady {
	n := NotReady{PodGroup: pg, Waiting: size}
	for i := range pods {
		pod := &pods[i]
		if pod.Namespace != pg.Namespace || pod.Annotations[api.AnnPodGroupName] != pg.Name || terminated(pod) {
			continue
		}
		n.Exist++
		if len(pod.Spec.SchedulingGates) > 0 {
			n.NGated++
		}
	}
	return n
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

func (p *planner) queueMissing(pg *api.PodGroup) *Blocked {
	return &Blocked{PodGroup: pg, Reason: api.ReasonQueueDoesNotExist,
		Message: fmt.Sprintf("Queue '%s' does not exist", pg.Spec.Queue)}
}

// choose picks the node (and GPU groups) for one pod without taking anything.
func (p *planner) choose(pod *corev1.Pod, nodes []*nodeState) *placement {
	switch {
	case gpushare.RequestsFraction(pod):
		return p.placeFraction(pod, nodes)
	case gpushare.WholeGPUs(pod) > 0:
		return p.placeWhole(gpushare.WholeGPUs(pod), nodes)
	case len(nodes) > 0:
		return &placement{node: nodes[0], kind: api.ResourceTypeRegular}
	}
	return nil
}

// demand is the GPUs a placement takes from its queue.
func (pl *placement) demand() float64 {
	if pl.kind == api.ResourceTypeFraction {
		return pl.portion * float64(pl.count)
	}
	return float64(pl.count)
}

// commit takes what a placement holds on its node, so that later pods of this cycle
// see it. With the burst-overpack fault a fraction's portion is not counted: a new
// group is known, but as empty, so the rest of the burst piles onto it (KAI #2153).
func (p *planner) commit(pl *placement) {
	for _, g := range pl.groups {
		grp := pl.node.groups[g]
		if grp == nil {
			grp = &gpuGroup{id: g}
			pl.node.groups[g] = grp
		}
		if !p.cfg.BurstOverpack {
			grp.used += pl.portion
		}
	}
	if pl.kind == api.ResourceTypeRegular {
		pl.node.whole += int64(pl.count)
	}
}

// save returns what undoes every commit and queue charge made after it.
func (p *planner) save() (restore func()) {
	type saved struct {
		whole  int64
		groups map[string]float64
	}
	nodes := map[*nodeState]saved{}
	for _, ns := range p.nodes {
		s := saved{whole: ns.whole, groups: map[string]float64{}}
		for id, g := range ns.groups {
			s.groups[id] = g.used
		}
		nodes[ns] = s
	}
	queueUse := map[string]float64{}
	for q, v := range p.queueUse {
		queueUse[q] = v
	}
	return func() {
		for ns, s := range nodes {
			ns.whole = s.whole
			ns.groups = map[string]*gpuGroup{}
			for id, used := range s.groups {
				ns.groups[id] = &gpuGroup{id: id, used: used}
			}
		}
		p.queueUse = queueUse
	}
}

// fitError is KAI's text for a pod no node takes: the reasons counted over the nodes
// that passed the filters (the stand-in's only resource reason is GPUs).
func fitError(nodes []*nodeState) string {
	msg := "no nodes with enough resources were found"
	if len(nodes) > 0 {
		msg += fmt.Sprintf(": %d node(s) didn't have enough resources: GPUs.", len(nodes))
	}
	return msg
}

func (p *planner) place(pod *corev1.Pod, pg *api.PodGroup) (*Decision, *Blocked) {
	q := p.queues[pg.Spec.Queue]
	if q == nil {
		return nil, p.queueMissing(pg)
	}
	nodes := p.feasible(pod)
	pl := p.choose(pod, nodes)
	if pl == nil {
		p.log.V(1).Info("No node fits pod", "namespace", pod.Namespace, "pod", pod.Name, "feasibleNodes", len(nodes))
		return nil, nil
	}
	demand := pl.demand()
	if b := p.overLimit(q, demand); b != nil {
		b.PodGroup = pg
		return nil, b
	}
	p.commit(pl)
	p.queueUse[q.Name] += demand
	return &Decision{Pod: pod, PodGroup: pg, BindRequest: p.bindRequest(pod, pl)}, nil
}

// placeGang places a gang's missing pods together or not at all: each pod in turn sees
// what the ones before it took in this cycle; if one finds no node, or the queue's limit
// cannot take them all, everything is undone and the group gets KAI's reason.
func (p *planner) placeGang(pg *api.PodGroup, pods []*corev1.Pod, size, needed int) ([]Decision, *Blocked) {
	q := p.queues[pg.Spec.Queue]
	if q == nil {
		return nil, p.queueMissing(pg)
	}
	if len(pods) < needed {
		// the group's other pods are not this scheduler's to place (another scheduler,
		// being deleted): the gang cannot form
		p.log.V(1).Info("Gang has too few schedulable pods", "namespace", pg.Namespace, "podGroup", pg.Name,
			"pending", len(pods), "needed", needed)
		return nil, nil
	}
	restore := p.save()
	var out []Decision
	demand := 0.0
	for i, pod := range pods {
		nodes := p.feasible(pod)
		pl := p.choose(pod, nodes)
		if pl == nil {
			restore()
			p.log.V(1).Info("Gang does not fit", "namespace", pg.Namespace, "podGroup", pg.Name,
				"placed", i, "minMember", size, "pod", pod.Name, "feasibleNodes", len(nodes))
			return nil, &Blocked{PodGroup: pg, Reason: api.ReasonPodSchedulingErrors, Message: fmt.Sprintf(
				"Resources were found for %d pods while %d are required for gang scheduling. "+
					"Additional pods cannot be scheduled due to: %s", i, size, fitError(nodes))}
		}
		p.commit(pl)
		demand += pl.demand()
		out = append(out, Decision{Pod: pod, PodGroup: pg, BindRequest: p.bindRequest(pod, pl)})
	}
	if b := p.overLimit(q, demand); b != nil {
		restore()
		b.PodGroup = pg
		return nil, b
	}
	p.queueUse[q.Name] += demand
	return out, nil
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
