package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"kaiops.dev/lab/kai-standin/internal/validating"
)

// TopologyPath is where KAI's admission serves the Topology (kai.scheduler/v1alpha1)
// validation.
const TopologyPath = "/validate-kai-scheduler-v1alpha1-topology"

// Topology is the webhook's reading of a Topology: its levels.
type Topology struct {
	Spec struct {
		Levels []TopologyLevel `json:"levels,omitempty"`
	} `json:"spec"`
}

type TopologyLevel struct {
	NodeLabel string `json:"nodeLabel"`
	Alias     string `json:"alias,omitempty"`
}

// ValidateTopology is KAI's check of a Topology's aliases, on CREATE and UPDATE: an alias
// used twice, or equal to any level's nodeLabel, refuses it (the CRD's own rules, such as
// nodeLabel uniqueness, are the API server's). An alias used n times is listed n-1 times.
func ValidateTopology(levels []TopologyLevel) error {
	labels := map[string]bool{}
	for _, l := range levels {
		labels[l.NodeLabel] = true
	}
	seen := map[string]bool{}
	var dup, clash []string
	for _, l := range levels {
		if l.Alias == "" {
			continue
		}
		if seen[l.Alias] {
			dup = append(dup, l.Alias)
		}
		seen[l.Alias] = true
		if labels[l.Alias] {
			clash = append(clash, l.Alias)
		}
	}
	var parts []string
	if len(dup) > 0 {
		slices.Sort(dup)
		parts = append(parts, fmt.Sprintf("aliases must be unique within the topology; duplicated: %v", dup))
	}
	if len(clash) > 0 {
		slices.Sort(clash)
		parts = append(parts, fmt.Sprintf("an alias must not equal a nodeLabel; conflicting: %v", clash))
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("invalid topology aliases: %s", strings.Join(parts, "; "))
}

// TopologyHandler is the Topology validation as an admission handler.
func TopologyHandler() cradmission.Handler {
	return validating.Handler(validating.Rules[Topology]{
		Create: func(_ context.Context, t *Topology) (cradmission.Warnings, error) {
			return nil, ValidateTopology(t.Spec.Levels)
		},
		Update: func(_ context.Context, _, t *Topology) (cradmission.Warnings, error) {
			return nil, ValidateTopology(t.Spec.Levels)
		},
	})
}
