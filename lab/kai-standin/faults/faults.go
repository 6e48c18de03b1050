// Package faults names the KAI issues the stand-in can play on purpose. Every fault is
// off unless named: the chart's `standin.faults` list reaches the components as
// `--standin-faults` (the operator renders it from Config kai-config's
// spec.standin.faults; the post-install/post-upgrade hook Job gets it in its args).
// Every component accepts the whole list and refuses an unknown name; only the
// component that plays a fault changes its behaviour.
package faults

import (
	"fmt"
	"sort"
	"strings"
)

// The faults, by the name the chart and the flag use.
const (
	APIUnauthorized      = "api-unauthorized"
	GangBroken           = "gang-broken"
	MissingKaiConfig     = "missing-kai-config"
	DuplicateReservation = "duplicate-reservation"
	BurstOverpack        = "burst-overpack"
	AdmissionFailure     = "admission-failure"
)

// Fault is one playable KAI issue: the component that plays it and where it comes from.
type Fault struct {
	Name      string
	Component string
	Issue     string
}

// Known is every fault the stand-in plays (CONTRACT.md, "Faults", says what each
// reproduces and what it does not).
var Known = []Fault{
	{APIUnauthorized, "binder", "KAI-Scheduler #1536, #1751 (its 401 consequence, #1817)"},
	{GangBroken, "scheduler", "NVIDIA/aicr #2636"},
	{MissingKaiConfig, "config-deployer", "KAI-Scheduler #1751"},
	{DuplicateReservation, "binder", "KAI-Scheduler #1673 (fixed by #1693 in v0.16.0)"},
	{BurstOverpack, "scheduler", "KAI-Scheduler #2153"},
	{AdmissionFailure, "binder", "KAI-Scheduler #848"},
}

// Lookup returns the fault of that name.
func Lookup(name string) (Fault, bool) {
	for _, f := range Known {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}

// Names lists the known fault names, sorted.
func Names() []string {
	out := make([]string, 0, len(Known))
	for _, f := range Known {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// Set is the faults a component was started with; the zero value is none. It is a
// flag.Value: `--standin-faults=a,b` (comma-separated; repeating the flag adds).
type Set map[string]bool

// Parse reads a comma-separated list; an unknown name is an error that lists the known.
func Parse(v string) (Set, error) {
	s := Set{}
	return s, s.Set(v)
}

// Set adds the comma-separated names of v.
func (s *Set) Set(v string) error {
	if *s == nil {
		*s = Set{}
	}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if _, ok := Lookup(name); !ok {
			return fmt.Errorf("unknown fault %q: the stand-in plays %s", name, strings.Join(Names(), ", "))
		}
		(*s)[name] = true
	}
	return nil
}

// Has says whether the fault is on.
func (s Set) Has(name string) bool { return s[name] }

// List is the faults that are on, sorted.
func (s Set) List() []string {
	out := make([]string, 0, len(s))
	for name, on := range s {
		if on {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// String is the flag's value: the sorted names, comma-separated.
func (s *Set) String() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.List(), ",")
}

// PlayedBy is the faults that are on and played by component.
func (s Set) PlayedBy(component string) []Fault {
	var out []Fault
	for _, name := range s.List() {
		if f, _ := Lookup(name); f.Component == component {
			out = append(out, f)
		}
	}
	return out
}
