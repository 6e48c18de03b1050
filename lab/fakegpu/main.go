// Command kaiops-fake-gpu is the lab's fake GPU device plugin for its one real node.
//
// It stands in for fake-gpu-operator's device plugin, which the lab cannot build (the
// Go module proxy does not serve that module). It registers with the kubelet through
// the device plugin API, advertises a fixed number of fake nvidia.com/gpu devices and,
// on allocation, hands the container NVIDIA_VISIBLE_DEVICES naming the devices it got,
// as the NVIDIA plugin does. There is no GPU behind them: KAIOPS_FAKE_GPU=true says so.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	cfg := Config{}
	flag.StringVar(&cfg.PluginDir, "plugin-dir", "/var/lib/kubelet/device-plugins",
		"the kubelet's device-plugins folder (holds kubelet.sock)")
	flag.StringVar(&cfg.Resource, "resource", "nvidia.com/gpu", "extended resource name")
	flag.IntVar(&cfg.Count, "count", 2, "number of fake devices to advertise")
	flag.StringVar(&cfg.NodeName, "node-name", "", "node name, part of each device ID")
	flag.StringVar(&cfg.Product, "product", "Fake-GPU", "product name passed to containers")
	flag.Parse()
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, time.Second); err != nil && ctx.Err() == nil {
		log.Fatalf("kaiops-fake-gpu: %v", err)
	}
}

// Config is what the plugin advertises and where it talks to the kubelet.
type Config struct {
	PluginDir string
	Resource  string
	Count     int
	NodeName  string
	Product   string
}

// Validate names the flag at fault and how to fix it.
func (c Config) Validate() error {
	switch {
	case c.Count < 1 || c.Count > 64:
		return fmt.Errorf("failed to start: --count=%d is outside 1..64", c.Count)
	case c.NodeName == "":
		return fmt.Errorf("failed to start: --node-name is required (the node's name)")
	case c.Resource == "":
		return fmt.Errorf("failed to start: --resource must name an extended resource")
	}
	return nil
}

func (c Config) socket() string {
	return filepath.Join(c.PluginDir, "kaiops-fake-gpu.sock")
}
