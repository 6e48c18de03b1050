package podgroupctl

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"kaiops.dev/lab/kai-standin/internal/validating"
)

// What KAI's PodGroup v2alpha2 validation reads (read from KAI's source, our own code): the
// gang fields of the PodGroup and of its SubGroups.
type subGroup struct {
	Name        string  `json:"name"`
	MinMember   *int32  `json:"minMember,omitempty"`
	MinSubGroup *int32  `json:"minSubGroup,omitempty"`
	Parent      *string `json:"parent,omitempty"`
}

type podGroupSpec struct {
	MinMember   *int32     `json:"minMember,omitempty"`
	MinSubGroup *int32     `json:"minSubGroup,omitempty"`
	SubGroups   []subGroup `json:"subGroups,omitempty"`
}

// PodGroup is the webhook's reading of a PodGroup.
type PodGroup struct {
	Spec podGroupSpec `json:"spec"`
}

// A finding of the rules: its text, and which kind it is. Structural findings are refused
// at once; the others are gathered, and some of them only warn (below).
type finding struct {
	msg  string
	kind findingKind
}

type findingKind int

const (
	structural findingKind = iota
	leafMinSubGroup
	missingMinMember
	parentMinMember
	minSubGroupOverChildren
)

func (f finding) Error() string { return f.msg }

// warnOnly: the findings KAI answers with a warning rather than a refusal. On CREATE a
// minSubGroup above the children; on UPDATE also minMember on a mid-level SubGroup (kept
// for objects made before the rule).
var warnOnly = map[bool][]findingKind{
	false: {minSubGroupOverChildren},
	true:  {minSubGroupOverChildren, parentMinMember},
}

// Validate is KAI's PodGroup validation: warnings, and the refusal (nil when admitted).
func Validate(spec podGroupSpec, update bool) (admission.Warnings, error) {
	found, structuralErr := check(spec)
	if structuralErr != nil {
		return nil, structuralErr
	}
	var warnings admission.Warnings
	var refused []error
	for _, f := range found {
		if slices.Contains(warnOnly[update], f.kind) {
			warnings = append(warnings, f.msg)
		} else {
			refused = append(refused, f)
		}
	}
	if len(refused) > 0 {
		return warnings, errors.Join(refused...)
	}
	return warnings, nil
}

func check(spec podGroupSpec) ([]finding, error) {
	if spec.MinMember != nil && spec.MinSubGroup != nil {
		return nil, finding{fmt.Sprintf("minMember and minSubGroup are mutually exclusive: set minMember (%d) to schedule a fixed "+
			"number of pods, or set minSubGroup to require a minimum number of child SubGroups, but not both", *spec.MinMember), structural}
	}
	byName := map[string]*subGroup{}
	var names []string
	for i := range spec.SubGroups {
		sg := &spec.SubGroups[i]
		if byName[sg.Name] != nil {
			return nil, finding{"duplicate subgroup name " + sg.Name, structural}
		}
		byName[sg.Name] = sg
		names = append(names, sg.Name)
	}
	slices.Sort(names)
	children := map[string][]string{}
	roots := 0
	for _, n := range names {
		sg := byName[n]
		if sg.Parent == nil {
			roots++
			continue
		}
		if byName[*sg.Parent] == nil {
			// KAI checks in map order: with several missing parents which one it names
			// varies; ours names the first subgroup by name
			return nil, finding{fmt.Sprintf("parent %s of %s was not found", *sg.Parent, sg.Name), structural}
		}
		children[*sg.Parent] = append(children[*sg.Parent], n)
	}
	if cyclic(names, children) {
		return nil, finding{"cycle detected in subgroups", structural}
	}
	var found []finding
	for _, n := range names {
		sg := byName[n]
		if sg.MinMember != nil && sg.MinSubGroup != nil {
			return nil, finding{fmt.Sprintf("subgroup %q: minMember and minSubGroup are mutually exclusive", n), structural}
		}
		found = append(found, subGroupFindings(sg, len(children[n]))...)
	}
	if spec.MinSubGroup != nil && int(*spec.MinSubGroup) > roots {
		found = append(found, finding{fmt.Sprintf("minSubGroup (%d) exceeds the number of direct child SubGroups (%d)",
			*spec.MinSubGroup, roots), minSubGroupOverChildren})
	}
	return found, nil
}

func subGroupFindings(sg *subGroup, nChildren int) []finding {
	var out []finding
	if nChildren == 0 {
		if sg.MinSubGroup != nil {
			out = append(out, finding{fmt.Sprintf("subgroup %q: minSubGroup cannot be set on a leaf SubGroup (no child SubGroups)", sg.Name), leafMinSubGroup})
		}
		if sg.MinMember == nil {
			out = append(out, finding{fmt.Sprintf("subgroup %s: minMember is required", sg.Name), missingMinMember})
		}
		return out
	}
	if sg.MinMember != nil {
		out = append(out, finding{fmt.Sprintf("subgroup %q: minMember cannot be set on a mid-level SubGroup (has child SubGroups); use minSubGroup instead", sg.Name), parentMinMember})
	}
	if sg.MinSubGroup != nil && int(*sg.MinSubGroup) > nChildren {
		out = append(out, finding{fmt.Sprintf("subgroup %q: minSubGroup (%d) exceeds the number of direct child SubGroups (%d)",
			sg.Name, *sg.MinSubGroup, nChildren), minSubGroupOverChildren})
	}
	return out
}

// cyclic: the parent links loop somewhere (every name is a start).
func cyclic(names []string, children map[string][]string) bool {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var visit func(string) bool
	visit = func(n string) bool {
		switch state[n] {
		case onPath:
			return true
		case done:
			return false
		}
		state[n] = onPath
		for _, c := range children[n] {
			if visit(c) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for _, n := range names {
		if visit(n) {
			return true
		}
	}
	return false
}

// WebhookPath is where KAI's podgroup-controller serves the PodGroup v2alpha2 validation.
const WebhookPath = "/validate-scheduling-run-ai-v2alpha2-podgroup"

// Webhook is the PodGroup validation as an admission handler.
func Webhook() admission.Handler {
	return validating.Handler(validating.Rules[PodGroup]{
		Create: func(_ context.Context, pg *PodGroup) (admission.Warnings, error) { return Validate(pg.Spec, false) },
		Update: func(_ context.Context, _, pg *PodGroup) (admission.Warnings, error) { return Validate(pg.Spec, true) },
	})
}
