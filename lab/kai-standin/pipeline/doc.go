// Package pipeline holds the stand-in's end-to-end test against a real API server
// (controller-runtime envtest). It runs only when KUBEBUILDER_ASSETS names a folder with
// kube-apiserver and etcd, for example the lab's own builds of them.
package pipeline
