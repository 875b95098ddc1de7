package otlp

import (
	"context"
	"math"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/encoding/protowire"
)

// MetricExporter sends metrics to an OTLP/HTTP endpoint, with the SDK's
// default temporality (cumulative) and aggregation selectors.
type MetricExporter struct {
	cfg  *config
	mu   sync.RWMutex
	done bool
}

var _ sdkmetric.Exporter = (*MetricExporter)(nil)

// NewMetricExporter configures a metric exporter from the environment read
// by getenv (os.Getenv when nil).
func NewMetricExporter(getenv func(string) string) (*MetricExporter, error) {
	if getenv == nil {
		getenv = osGetenv
	}
	c, err := loadConfig(getenv, "METRICS", "/v1/metrics")
	if err != nil {
		return nil, err
	}
	return &MetricExporter{cfg: c}, nil
}

// Temporality is the SDK's default.
func (e *MetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

// Aggregation is the SDK's default.
func (e *MetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export sends one collection.
func (e *MetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.RLock()
	done := e.done
	e.mu.RUnlock()
	if done {
		return errShutdown
	}
	return e.cfg.send(ctx, encodeMetrics(rm))
}

// ForceFlush has nothing to flush: Export sends at once.
func (e *MetricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

// Shutdown stops the exporter; later exports fail.
func (e *MetricExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	e.cfg.client.CloseIdleConnections()
	return ctx.Err()
}

// encodeMetrics writes a collection as an OTLP MetricsData message
// (wire-identical to the collector's ExportMetricsServiceRequest).
// Exemplars and summaries (which the SDK's instruments do not produce) are
// left out.
func encodeMetrics(rm *metricdata.ResourceMetrics) []byte {
	var b buf
	b.msg(1, func() { // MetricsData.resource_metrics
		b.msg(1, func() { writeResource(&b, rm.Resource) })
		for _, sm := range rm.ScopeMetrics {
			b.msg(2, func() { // ResourceMetrics.scope_metrics
				b.msg(1, func() { writeScope(&b, sm.Scope) })
				for _, m := range sm.Metrics {
					if n, data := metricData(&b, m.Data); n != 0 {
						b.msg(2, func() { // ScopeMetrics.metrics
							b.str(1, m.Name)
							b.str(2, m.Description)
							b.str(3, m.Unit)
							b.msg(n, data) // the data oneof, last
						})
					}
				}
				b.str(3, sm.Scope.SchemaURL)
			})
		}
		if rm.Resource != nil {
			b.str(3, rm.Resource.SchemaURL())
		}
	})
	return b
}

// metricData returns the field of a Metric's data oneof that holds d's
// kind (Gauge 5, Sum 7, Histogram 9, ExponentialHistogram 10) and the
// function that writes its message into b; 0 for a kind the encoder does
// not write.
func metricData(b *buf, d metricdata.Aggregation) (protowire.Number, func()) {
	switch d := d.(type) {
	case metricdata.Gauge[int64]:
		return 5, func() { writeNumbers(b, d.DataPoints) }
	case metricdata.Gauge[float64]:
		return 5, func() { writeNumbers(b, d.DataPoints) }
	case metricdata.Sum[int64]:
		return 7, func() { writeNumbers(b, d.DataPoints); writeSumTail(b, d.Temporality, d.IsMonotonic) }
	case metricdata.Sum[float64]:
		return 7, func() { writeNumbers(b, d.DataPoints); writeSumTail(b, d.Temporality, d.IsMonotonic) }
	case metricdata.Histogram[int64]:
		return 9, func() { writeHistograms(b, d.DataPoints); b.varint(2, temporality(d.Temporality)) }
	case metricdata.Histogram[float64]:
		return 9, func() { writeHistograms(b, d.DataPoints); b.varint(2, temporality(d.Temporality)) }
	case metricdata.ExponentialHistogram[int64]:
		return 10, func() { writeExpHistograms(b, d.DataPoints); b.varint(2, temporality(d.Temporality)) }
	case metricdata.ExponentialHistogram[float64]:
		return 10, func() { writeExpHistograms(b, d.DataPoints); b.varint(2, temporality(d.Temporality)) }
	}
	return 0, nil
}

// writeSumTail writes a Sum's fields after its data points.
func writeSumTail(b *buf, t metricdata.Temporality, monotonic bool) {
	b.varint(2, temporality(t))
	if monotonic {
		b.varint(3, 1)
	}
}

// The values of OTLP's AggregationTemporality.
const (
	temporalityDelta      = 1
	temporalityCumulative = 2
)

func temporality(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.CumulativeTemporality:
		return temporalityCumulative
	case metricdata.DeltaTemporality:
		return temporalityDelta
	}
	return 0
}

// writeNumbers writes dps as repeated NumberDataPoint field 1.
func writeNumbers[N int64 | float64](b *buf, dps []metricdata.DataPoint[N]) {
	for _, dp := range dps {
		b.msg(1, func() {
			b.fixed64(2, nanos(dp.StartTime))
			b.fixed64(3, nanos(dp.Time))
			writeAttrs(b, 7, dp.Attributes.ToSlice())
			switch v := any(dp.Value).(type) { // the oneof value, last
			case float64:
				b.fixed64Always(4, math.Float64bits(v)) // as_double
			case int64:
				b.fixed64Always(6, uint64(v)) // as_int, sfixed64
			}
		})
	}
}

func extrema[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	if v, ok := e.Value(); ok {
		f := float64(v)
		return &f
	}
	return nil
}

// writeHistograms writes dps as repeated HistogramDataPoint field 1.
func writeHistograms[N int64 | float64](b *buf, dps []metricdata.HistogramDataPoint[N]) {
	for _, dp := range dps {
		b.msg(1, func() {
			sum := float64(dp.Sum)
			b.fixed64(2, nanos(dp.StartTime))
			b.fixed64(3, nanos(dp.Time))
			b.fixed64(4, dp.Count)
			b.optDouble(5, &sum)
			b.packedFixed64(6, dp.BucketCounts)
			b.packedDouble(7, dp.Bounds)
			writeAttrs(b, 9, dp.Attributes.ToSlice())
			b.optDouble(11, extrema(dp.Min))
			b.optDouble(12, extrema(dp.Max))
		})
	}
}

// writeExpHistograms writes dps as repeated ExponentialHistogramDataPoint
// field 1.
func writeExpHistograms[N int64 | float64](b *buf, dps []metricdata.ExponentialHistogramDataPoint[N]) {
	for _, dp := range dps {
		b.msg(1, func() {
			sum := float64(dp.Sum)
			writeAttrs(b, 1, dp.Attributes.ToSlice())
			b.fixed64(2, nanos(dp.StartTime))
			b.fixed64(3, nanos(dp.Time))
			b.fixed64(4, dp.Count)
			b.optDouble(5, &sum)
			b.sint32(6, dp.Scale)
			b.fixed64(7, dp.ZeroCount)
			b.msg(8, func() { writeBuckets(b, dp.PositiveBucket) })
			b.msg(9, func() { writeBuckets(b, dp.NegativeBucket) })
			b.optDouble(12, extrema(dp.Min))
			b.optDouble(13, extrema(dp.Max))
			b.double(14, dp.ZeroThreshold)
		})
	}
}

// writeBuckets writes the fields of an ExponentialHistogramDataPoint's
// Buckets.
func writeBuckets(b *buf, e metricdata.ExponentialBucket) {
	b.sint32(1, e.Offset)
	b.packedVarint(2, e.Counts)
}
