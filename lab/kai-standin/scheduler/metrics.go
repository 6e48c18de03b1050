package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics carry KAI's names (namespace `kai`) so that dashboards and the collection's
// checks read the stand-in as they read KAI. Buckets are 5 ms doubling ten times.
type Metrics struct {
	BindLatency    prometheus.Histogram
	E2E            prometheus.Histogram
	TaskScheduling prometheus.Histogram
}

func NewMetrics(reg prometheus.Registerer) *Metrics {
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "kai", Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(5, 2, 10),
		})
	}
	m := &Metrics{
		BindLatency:    h("task_bind_latency_milliseconds", "Time to create one BindRequest (the scheduler's Bind), in ms (kaiops stand-in)"),
		E2E:            h("e2e_scheduling_latency_milliseconds", "Duration of one scheduling cycle, in ms (kaiops stand-in)"),
		TaskScheduling: h("task_scheduling_latency_milliseconds", "Pod creation to bind attempt, in ms (kaiops stand-in)"),
	}
	reg.MustRegister(m.BindLatency, m.E2E, m.TaskScheduling)
	return m
}
