package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

func TestDeviceIDs(t *testing.T) {
	cases := []struct {
		name  string
		node  string
		count int
	}{
		{"one", "node-a", 1},
		{"several", "node-a", 8},
		{"other node", "node-b", 8},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ids := DeviceIDs(tc.node, tc.count)
			if len(ids) != tc.count {
				t.Fatalf("got %d ids, want %d", len(ids), tc.count)
			}
			again := DeviceIDs(tc.node, tc.count)
			for i, id := range ids {
				if id != again[i] {
					t.Fatalf("ids not stable: %s vs %s", id, again[i])
				}
				if !strings.HasPrefix(id, "GPU-") || len(id) != 40 {
					t.Fatalf("id %q is not shaped like a GPU UUID", id)
				}
				if prev, ok := seen[id]; ok && prev != tc.node {
					t.Fatalf("id %s shared by %s and %s", id, prev, tc.node)
				}
				seen[id] = tc.node
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	p := newPlugin(Config{NodeName: "n", Count: 2, Product: "Fake-GPU"})
	cases := []struct {
		name    string
		ids     []string
		wantEnv string
		wantErr bool
	}{
		{"one device", p.ids[:1], p.ids[0], false},
		{"two devices", p.ids, p.ids[0] + "," + p.ids[1], false},
		{"unknown device", []string{"GPU-nope"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{
				ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: tc.ids}},
			})
			if tc.wantErr {
				if err == nil {
					t.Fatal("allocating an unknown device succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			env := resp.ContainerResponses[0].Envs
			if env["NVIDIA_VISIBLE_DEVICES"] != tc.wantEnv || env["KAIOPS_FAKE_GPU"] != "true" {
				t.Fatalf("envs %v", env)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no node", Config{Count: 1, Resource: "r"}, "--node-name"},
		{"zero count", Config{Count: 0, NodeName: "n", Resource: "r"}, "--count"},
		{"ok", Config{Count: 2, NodeName: "n", Resource: "r"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

// fakeKubelet records registrations, the way the kubelet's registration service sees them.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	got chan *pluginapi.RegisterRequest
}

func (f *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	f.got <- r
	return &pluginapi.Empty{}, nil
}

func TestRunRegistersAndServesDevices(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "fgpu") // short path: unix socket names are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	lis, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	kubelet := &fakeKubelet{got: make(chan *pluginapi.RegisterRequest, 4)}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, kubelet)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	cfg := Config{PluginDir: dir, Resource: "nvidia.com/gpu", Count: 3, NodeName: "n"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, 20*time.Millisecond) }()

	select {
	case req := <-kubelet.got:
		if req.ResourceName != "nvidia.com/gpu" || req.Version != pluginapi.Version ||
			req.Endpoint != "kaiops-fake-gpu.sock" {
			t.Fatalf("registration %+v", req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("plugin never registered")
	}

	conn, err := grpc.NewClient("unix://"+cfg.socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := pluginapi.NewDevicePluginClient(conn).ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Devices) != 3 || list.Devices[0].Health != pluginapi.Healthy {
		t.Fatalf("devices %v", list.Devices)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v", err)
	}
}
