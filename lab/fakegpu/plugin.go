package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// DeviceIDs are stable per node and index, shaped like NVIDIA's GPU UUIDs.
func DeviceIDs(node string, count int) []string {
	ids := make([]string, count)
	for i := range ids {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", node, i)))
		h := fmt.Sprintf("%x", sum[:16])
		ids[i] = fmt.Sprintf("GPU-%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
	}
	return ids
}

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	cfg   Config
	ids   []string
	known map[string]bool
}

func newPlugin(cfg Config) *plugin {
	ids := DeviceIDs(cfg.NodeName, cfg.Count)
	known := make(map[string]bool, len(ids))
	for _, id := range ids {
		known[id] = true
	}
	return &plugin{cfg: cfg, ids: ids, known: known}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	devs := make([]*pluginapi.Device, len(p.ids))
	for i, id := range p.ids {
		devs[i] = &pluginapi.Device{ID: id, Health: pluginapi.Healthy}
	}
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	// Fake devices never change health; hold the stream until the kubelet or we go away.
	<-stream.Context().Done()
	return nil
}

// Allocate gives each container the IDs it was granted, the way the NVIDIA plugin's
// envvar strategy does, plus a marker that no real GPU stands behind them.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, creq := range req.ContainerRequests {
		for _, id := range creq.DevicesIds {
			if !p.known[id] {
				return nil, fmt.Errorf("failed to allocate %s: unknown device", id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":  strings.Join(creq.DevicesIds, ","),
				"KAIOPS_FAKE_GPU":         "true",
				"KAIOPS_FAKE_GPU_PRODUCT": p.cfg.Product,
			},
		})
	}
	return resp, nil
}

// Run serves the plugin and (re-)registers with the kubelet whenever its socket is
// recreated (a kubelet restart wipes the plugin folder), until ctx ends.
func Run(ctx context.Context, cfg Config, every time.Duration) error {
	kubelet := filepath.Join(cfg.PluginDir, "kubelet.sock")
	var server *grpc.Server
	var registered os.FileInfo
	defer func() {
		if server != nil {
			server.Stop()
		}
	}()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		info, err := os.Stat(kubelet)
		if err == nil && (registered == nil || !os.SameFile(info, registered)) {
			if server != nil {
				server.Stop()
			}
			server, err = serve(cfg)
			if err != nil {
				return err
			}
			if err := register(ctx, cfg, kubelet); err != nil {
				if ctx.Err() != nil {
					// stopped while the kubelet was answering: a shutdown, not a failure
					// to register (under load the reply can come after the stop)
					return ctx.Err()
				}
				return err
			}
			registered = info
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

func serve(cfg Config) (*grpc.Server, error) {
	sock := cfg.socket()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to remove stale socket %s: %w", sock, err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s: %w", sock, err)
	}
	server := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(server, newPlugin(cfg))
	go func() { _ = server.Serve(lis) }()
	return server, nil
}

func register(ctx context.Context, cfg Config, kubelet string) error {
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("failed to dial kubelet at %s: %w", kubelet, err)
	}
	defer conn.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(rctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(cfg.socket()),
		ResourceName: cfg.Resource,
	})
	if err != nil {
		return fmt.Errorf("failed to register %s with the kubelet: %w", cfg.Resource, err)
	}
	return nil
}
