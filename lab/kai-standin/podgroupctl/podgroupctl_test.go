package podgroupctl

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"kaiops.dev/lab/kai-standin/api"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

func member(name, node string, anns map[string]string, gpus int64) *corev1.Pod {
	a := map[string]string{api.AnnPodGroupName: "pg"}
	for k, v := range anns {
		a[k] = v
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: a},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}}}
	if gpus > 0 {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{api.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return p
}

func TestResourcesStatus(t *testing.T) {
	cases := []struct {
		name                 string
		pods                 []client.Object
		requested, allocated string
	}{
		{"one bound fraction", []client.Object{member("a", "n1", map[string]string{api.AnnGPUFraction: "0.5"}, 0)}, "500m", "500m"},
		{"pending whole GPU", []client.Object{member("a", "", nil, 2)}, "2", "0"},
		{"mixed", []client.Object{member("a", "n1", map[string]string{api.AnnGPUFraction: "0.5"}, 0), member("b", "", nil, 1)}, "1500m", "500m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pg := &api.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "ns"}}
			c := fake.NewClientBuilder().WithScheme(boot.Scheme()).WithObjects(append(tc.pods, pg)...).
				WithStatusSubresource(&api.PodGroup{}).
				WithIndex(&corev1.Pod{}, fieldPodGroup, func(o client.Object) []string { return []string{o.GetAnnotations()[api.AnnPodGroupName]} }).
				Build()
			ctx := context.Background()
			if _, err := (&Controller{Client: c}).Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pg"}}); err != nil {
				t.Fatal(err)
			}
			_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pg"}, pg)
			req := pg.Status.ResourcesStatus.Requested[api.ResourceGPU]
			alloc := pg.Status.ResourcesStatus.Allocated[api.ResourceGPU]
			if req.Cmp(resource.MustParse(tc.requested)) != 0 || alloc.Cmp(resource.MustParse(tc.allocated)) != 0 {
				t.Fatalf("requested %s allocated %s, want %s %s", req.String(), alloc.String(), tc.requested, tc.allocated)
			}
		})
	}
}
