// The lab's fake GPU device plugin (our own code; see main.go for why it exists).
module kaiops.dev/lab/fakegpu

go 1.26.0

require (
	google.golang.org/grpc v1.72.2
	k8s.io/kubelet v0.35.4
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
