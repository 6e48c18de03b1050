package podgrouper

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

func barePod(labels, anns map[string]string, prio string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: labels, Annotations: anns},
		Spec:       corev1.PodSpec{SchedulerName: "kai-scheduler", PriorityClassName: prio},
	}
}

func TestPodGroup(t *testing.T) {
	cases := []struct {
		name      string
		pod       *corev1.Pod
		classes   []string
		wantQueue string
		wantPrio  string
	}{
		{"defaults", barePod(nil, map[string]string{"gpu-fraction": "0.5"}, ""), nil, "default-queue", "train"},
		{"queue label", barePod(map[string]string{"kai.scheduler/queue": "team"}, nil, ""), nil, "team", "train"},
		{"existing priority class", barePod(nil, nil, "inference"), []string{"inference"}, "default-queue", "inference"},
		{"missing priority class", barePod(nil, nil, "nope"), nil, "default-queue", "train"},
		{"label before field", barePod(map[string]string{"priorityClassName": "build"}, nil, "inference"), []string{"build", "inference"}, "default-queue", "build"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{tc.pod}
			for _, c := range tc.classes {
				objs = append(objs, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: c}})
			}
			c := fake.NewClientBuilder().WithScheme(boot.Scheme()).WithObjects(objs...).Build()
			g := &Grouper{Client: c, Recorder: record.NewFakeRecorder(10), SchedulerName: "kai-scheduler", QueueLabelKey: "kai.scheduler/queue"}
			ctx := context.Background()
			if _, err := g.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}); err != nil {
				t.Fatal(err)
			}
			pg := &api.PodGroup{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg-p-u1"}, pg); err != nil {
				t.Fatal(err)
			}
			if pg.Spec.Queue != tc.wantQueue || pg.Spec.PriorityClassName != tc.wantPrio || *pg.Spec.MinMember != 1 {
				t.Fatalf("spec = %+v", pg.Spec)
			}
			o := pg.OwnerReferences
			if len(o) != 1 || o[0].Kind != "Pod" || o[0].APIVersion != "v1" || o[0].Name != "p" || o[0].UID != "u1" || o[0].Controller != nil {
				t.Fatalf("owner = %+v", o)
			}
			if pg.Annotations[api.AnnTopOwnerMetadata] != "group: \"\"\nkind: Pod\nname: p\nuid: u1\nversion: v1\n" {
				t.Fatalf("top owner = %q", pg.Annotations[api.AnnTopOwnerMetadata])
			}
			for k, v := range tc.pod.Annotations {
				if pg.Annotations[k] != v {
					t.Fatalf("annotation %s not copied: %v", k, pg.Annotations)
				}
			}
			pod := &corev1.Pod{}
			_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "p"}, pod)
			if pod.Annotations[api.AnnPodGroupName] != "pg-p-u1" {
				t.Fatalf("pod annotations = %v", pod.Annotations)
			}
		})
	}
}

func TestSkips(t *testing.T) {
	other := barePod(nil, nil, "")
	other.Spec.SchedulerName = "default-scheduler"
	cases := []struct {
		name string
		pod  *corev1.Pod
	}{
		{"other scheduler", other},
		{"skip annotation", barePod(nil, map[string]string{api.AnnSkipPodGrouper: "true"}, "")},
		{"bare pod already grouped", barePod(nil, map[string]string{api.AnnPodGroupName: "pg-elsewhere"}, "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(boot.Scheme()).WithObjects(tc.pod).Build()
			g := &Grouper{Client: c, Recorder: record.NewFakeRecorder(10), SchedulerName: "kai-scheduler", QueueLabelKey: "kai.scheduler/queue"}
			if _, err := g.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "p"}}); err != nil {
				t.Fatal(err)
			}
			err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "pg-p-u1"}, &api.PodGroup{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("PodGroup: %v, want none", err)
			}
		})
	}
}
