// Package api holds our own Go types for the KAI CRDs the stand-in reads and writes.
// They carry only the fields the stand-in uses; every write to these objects is a merge
// patch, so fields these types do not know survive on the server.
package api

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	BindRequestGV = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v1alpha2"}
	PodGroupGV    = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2alpha2"}
	QueueGV       = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2"}
	ConfigGV      = schema.GroupVersion{Group: "kai.scheduler", Version: "v1"}
)

// AddToScheme registers every stand-in CRD type with its group version.
func AddToScheme(s *runtime.Scheme) error {
	add := func(gv schema.GroupVersion, objs ...runtime.Object) {
		s.AddKnownTypes(gv, objs...)
		metav1.AddToGroupVersion(s, gv)
	}
	add(BindRequestGV, &BindRequest{}, &BindRequestList{})
	add(PodGroupGV, &PodGroup{}, &PodGroupList{})
	add(QueueGV, &Queue{}, &QueueList{})
	add(ConfigGV, &Config{}, &ConfigList{})
	return nil
}
