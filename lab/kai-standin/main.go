// kai-standin is the kaiops lab's stand-in for KAI Scheduler: one binary, one component
// per first argument, each held to the behaviour recorded in
// shared/reference/kai-contract.md (CONTRACT.md says what is and is not reproduced).
package main

import (
	"fmt"
	"os"
	"sort"

	"kaiops.dev/lab/kai-standin/admission"
	"kaiops.dev/lab/kai-standin/binder"
	"kaiops.dev/lab/kai-standin/gpustatus"
	"kaiops.dev/lab/kai-standin/hooks"
	"kaiops.dev/lab/kai-standin/operator"
	"kaiops.dev/lab/kai-standin/podgroupctl"
	"kaiops.dev/lab/kai-standin/podgrouper"
	"kaiops.dev/lab/kai-standin/queuectl"
	"kaiops.dev/lab/kai-standin/scheduler"
)

var components = map[string]func(args []string) error{
	"admission":           admission.Main,
	"pod-grouper":         podgrouper.Main,
	"scheduler":           scheduler.Main,
	"binder":              binder.Main,
	"gpu-status-updater":  gpustatus.Main,
	"podgroup-controller": podgroupctl.Main,
	"queue-controller":    queuectl.Main,
	"operator":            operator.Main,
	// helm hook programs of the chart (KAI's crd-upgrader image plays these)
	"crd-upgrader":    hooks.CRDUpgrader,
	"config-deployer": hooks.ConfigDeployer,
	"config-cleanup":  hooks.ConfigCleanup,
}

func usage() {
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kai-standin <component> [flags]\ncomponents (kaiops stand-ins for KAI Scheduler's): %v\n", names)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	run, ok := components[os.Args[1]]
	if !ok {
		usage()
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "kai-standin %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
