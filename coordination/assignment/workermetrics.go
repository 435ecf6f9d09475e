package assignment

import (
	"time"

	"github.com/kcltool/kcltool/coordination"
)

// throughputMetric is WorkerMetricType.THROUGHPUT's short name, the
// synthetic metric of a worker that reports no CPU.
const throughputMetric = "T"

// worker is one active worker as the deciders see it: a port of the
// KCL's WorkerMetricStats methods the assignment uses. stats is sts, opr
// its operating range; avg is metricStatsMap, the averages computed at the
// start of a run and raised as leases are given to the worker
// (extrapolate...).
type worker struct {
	id    string
	stats map[string][]float64
	opr   map[string][]int64
	alpha float64
	avg   map[string]float64
	// order keeps the deciders' ties stable (see queue.go).
	order int
}

func newWorker(m coordination.WorkerMetrics, alpha float64) *worker {
	return &worker{id: m.WorkerID, stats: m.Samples, opr: m.OperatingRange, alpha: alpha, avg: map[string]float64{}}
}

// usingDefaultMetric is isUsingDefaultWorkerMetric: no sts and no opr, or
// a "T" entry in sts; such a worker is balanced on throughput.
func (w *worker) usingDefaultMetric() bool {
	if len(w.stats) == 0 && len(w.opr) == 0 {
		return true
	}
	_, ok := w.stats[throughputMetric]
	return ok
}

// validMetrics is isValidWorkerMetric (lut is checked by the caller): a
// default-metric worker is valid; otherwise every metric in sts has an
// operating range, and every range has a non-zero maximum.
func validMetrics(m coordination.WorkerMetrics) bool {
	w := worker{stats: m.Samples, opr: m.OperatingRange}
	if w.usingDefaultMetric() {
		return true
	}
	if m.Samples == nil || m.OperatingRange == nil {
		return false
	}
	for name := range m.Samples {
		if _, ok := m.OperatingRange[name]; !ok {
			return false
		}
	}
	for _, r := range m.OperatingRange {
		if len(r) == 0 || r[0] == 0 {
			return false
		}
	}
	return true
}

// metricFailing is isAnyWorkerMetricFailing: a non-default worker whose
// last sample of some metric is -1 (the capture failed). Such a worker
// gets nothing this run.
func metricFailing(m coordination.WorkerMetrics) bool {
	w := worker{stats: m.Samples, opr: m.OperatingRange}
	if w.usingDefaultMetric() {
		return false
	}
	for _, s := range m.Samples {
		if len(s) > 0 && s[len(s)-1] == -1 {
			return true
		}
	}
	return false
}

// metricsExpired is WorkerMetricStats.isExpired: lut older than maxAge, at
// the second (lut is epoch seconds).
func metricsExpired(m coordination.WorkerMetrics, now time.Time, maxAge time.Duration) bool {
	if m.LastUpdate.IsZero() {
		return true
	}
	return now.Sub(m.LastUpdate) > maxAge
}

// setDefaultMetric is setOperatingRangeAndWorkerMetricsDataForDefaultWorker:
// a default-metric worker reports its share of the fleet's throughput as
// "T" = ratio × 100 against an operating range of 100.
func (w *worker) setDefaultMetric(ratio float64) {
	w.opr = map[string][]int64{throughputMetric: {100}}
	w.stats = map[string][]float64{throughputMetric: {ratio * 100, ratio * 100}}
	w.avg = map[string]float64{}
}

// metric is getMetricStat: the exponential moving average of the samples
// (alpha workerMetricsEMAAlpha, the first sample taken as is), skipping
// failed (-1) ones; computed once per run, then extrapolated.
func (w *worker) metric(name string) float64 {
	if v, ok := w.avg[name]; ok {
		return v
	}
	var v float64
	first := true
	for _, s := range w.stats[name] {
		if s == -1 {
			continue
		}
		if first {
			v, first = s, false
		} else {
			v = w.alpha*s + (1-w.alpha)*v
		}
	}
	w.avg[name] = v
	return v
}

func (w *worker) has(name string) bool { _, ok := w.stats[name]; return ok }

// extrapolated is extrapolateMetricsValue: the metric after the worker
// gains a lease of tput KBps. With a fleet throughput known, the metric
// grows by the lease's share of the per-worker target; without it (a new
// application: no lease has throughput yet), by the fleet average spread
// over the target lease count.
func (w *worker) extrapolated(name string, fleetAvg, targetTput, tput, targetLeases float64) float64 {
	if targetTput > 0 {
		return w.metric(name) + tput*fleetAvg/targetTput
	}
	return w.metric(name) + fleetAvg/targetLeases
}

// addThroughput is extrapolateMetricStatValuesForAddedThroughput, applied
// to the metrics computed so far (the KCL's replaceAll on metricStatsMap).
func (w *worker) addThroughput(fleet map[string]float64, targetTput, tput, targetLeases float64) {
	for name := range w.avg {
		w.avg[name] = w.extrapolated(name, fleet[name], targetTput, tput, targetLeases)
	}
}

// wouldExceed is willAnyMetricStatsGoAboveAverageUtilizationOrOperatingRange:
// a lease of tput would lift some metric above the fleet's average or the
// worker's operating range.
//
// Unlike the KCL, "above" allows a relative rounding error (exceedTolerance):
// the extrapolated value is a sum of as many additions as leases given,
// and a worker filled exactly to the average (leases of equal weight, the
// synthetic metric of an idle fleet) would otherwise stop a lease short of
// it for the last bits of a float (measured: a new worker held 99 of its
// 100 leases at 1,000 leases × 10 workers).
func (w *worker) wouldExceed(fleet map[string]float64, targetTput, tput, targetLeases float64) bool {
	for name := range w.stats {
		v := w.extrapolated(name, fleet[name], targetTput, tput, targetLeases)
		if v > fleet[name]*(1+exceedTolerance) || v > float64(w.maxOf(name))*(1+exceedTolerance) {
			return true
		}
	}
	return false
}

// exceedTolerance is wouldExceed's relative allowance for rounding.
const exceedTolerance = 1e-9

// aboveRange is isWorkerMetricAboveOperatingRange.
func (w *worker) aboveRange(name string) bool {
	v, ok := w.avg[name]
	return ok && v > float64(w.maxOf(name))
}

func (w *worker) maxOf(name string) int64 {
	if r := w.opr[name]; len(r) > 0 {
		return r[0]
	}
	return 0
}

// toReachAverage is computePercentageToReachAverage: how much more load,
// as a fraction of its current load, the worker can take before its
// closest-to-average metric reaches the fleet average (1 for an idle
// metric). The deciders give leases to the highest first.
func (w *worker) toReachAverage(fleet map[string]float64) float64 {
	best := 0.0
	first := true
	for name := range w.stats {
		v := w.metric(name)
		r := 1.0
		if v != 0 {
			r = (fleet[name] - v) / v
		}
		if first || r < best {
			best, first = r, false
		}
	}
	if first {
		return maxFloat
	}
	return best
}
