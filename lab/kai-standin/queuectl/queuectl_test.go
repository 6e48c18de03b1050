package queuectl

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kaiops.dev/lab/kai-standin/api"
)

func TestCompute(t *testing.T) {
	q := func(name, parent string) api.Queue {
		return api.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: api.QueueSpec{ParentQueue: parent}}
	}
	pg := func(queue, alloc, req string) api.PodGroup {
		return api.PodGroup{Spec: api.PodGroupSpec{Queue: queue}, Status: api.PodGroupStatus{ResourcesStatus: api.ResourcesStatus{
			Allocated: corev1.ResourceList{api.ResourceGPU: resource.MustParse(alloc)},
			Requested: corev1.ResourceList{api.ResourceGPU: resource.MustParse(req)},
		}}}
	}
	queues := []api.Queue{q("default-queue", "default-parent-queue"), q("default-parent-queue", ""), q("team-b", "default-parent-queue")}
	pgs := []api.PodGroup{pg("default-queue", "500m", "500m"), pg("team-b", "0", "1"), pg("default-queue", "1", "1")}
	got := Compute(queues, pgs)
	cases := []struct {
		queue, children, alloc, req string
	}{
		{"default-queue", "", "1500m", "1500m"},
		{"team-b", "", "0", "1"},
		{"default-parent-queue", "default-queue,team-b", "1500m", "2500m"},
	}
	for _, tc := range cases {
		t.Run(tc.queue, func(t *testing.T) {
			st := got[tc.queue]
			a := st.Allocated[api.ResourceGPU]
			r := st.Requested[api.ResourceGPU]
			if strings.Join(st.Children, ",") != tc.children || a.Cmp(resource.MustParse(tc.alloc)) != 0 || r.Cmp(resource.MustParse(tc.req)) != 0 {
				t.Fatalf("status = children %v allocated %s requested %s", st.Children, a.String(), r.String())
			}
		})
	}
}
