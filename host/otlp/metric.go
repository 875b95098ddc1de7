package otlp

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
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
	return e.cfg.send(ctx, MetricsData(rm))
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

// MetricsData converts a collection into the OTLP message. Exemplars and
// summaries (which the SDK's instruments do not produce) are left out.
func MetricsData(rm *metricdata.ResourceMetrics) *metricspb.MetricsData {
	r := &metricspb.ResourceMetrics{Resource: resourceProto(rm.Resource)}
	if rm.Resource != nil {
		r.SchemaUrl = rm.Resource.SchemaURL()
	}
	for _, sm := range rm.ScopeMetrics {
		s := &metricspb.ScopeMetrics{Scope: scopeProto(sm.Scope), SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			if p := metricProto(m); p != nil {
				s.Metrics = append(s.Metrics, p)
			}
		}
		r.ScopeMetrics = append(r.ScopeMetrics, s)
	}
	return &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{r}}
}

func metricProto(m metricdata.Metrics) *metricspb.Metric {
	p := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		p.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numbers(d.DataPoints)}}
	case metricdata.Gauge[float64]:
		p.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numbers(d.DataPoints)}}
	case metricdata.Sum[int64]:
		p.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numbers(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Sum[float64]:
		p.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numbers(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Histogram[int64]:
		p.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: histograms(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.Histogram[float64]:
		p.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: histograms(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.ExponentialHistogram[int64]:
		p.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: expHistograms(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
	case metricdata.ExponentialHistogram[float64]:
		p.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{DataPoints: expHistograms(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
	default:
		return nil
	}
	return p
}

func temporality(t metricdata.Temporality) metricspb.AggregationTemporality {
	switch t {
	case metricdata.CumulativeTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	case metricdata.DeltaTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func setAttrs(s attribute.Set) []*commonpb.KeyValue { return attrs(s.ToSlice()) }

func numbers[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricspb.NumberDataPoint {
	out := make([]*metricspb.NumberDataPoint, len(dps))
	for i, dp := range dps {
		p := &metricspb.NumberDataPoint{Attributes: setAttrs(dp.Attributes), StartTimeUnixNano: nanos(dp.StartTime), TimeUnixNano: nanos(dp.Time)}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricspb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out[i] = p
	}
	return out
}

func extrema[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	if v, ok := e.Value(); ok {
		f := float64(v)
		return &f
	}
	return nil
}

func histograms[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricspb.HistogramDataPoint {
	out := make([]*metricspb.HistogramDataPoint, len(dps))
	for i, dp := range dps {
		sum := float64(dp.Sum)
		out[i] = &metricspb.HistogramDataPoint{
			Attributes: setAttrs(dp.Attributes), StartTimeUnixNano: nanos(dp.StartTime), TimeUnixNano: nanos(dp.Time),
			Count: dp.Count, Sum: &sum, BucketCounts: dp.BucketCounts, ExplicitBounds: dp.Bounds,
			Min: extrema(dp.Min), Max: extrema(dp.Max),
		}
	}
	return out
}

func expHistograms[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []*metricspb.ExponentialHistogramDataPoint {
	out := make([]*metricspb.ExponentialHistogramDataPoint, len(dps))
	for i, dp := range dps {
		sum := float64(dp.Sum)
		out[i] = &metricspb.ExponentialHistogramDataPoint{
			Attributes: setAttrs(dp.Attributes), StartTimeUnixNano: nanos(dp.StartTime), TimeUnixNano: nanos(dp.Time),
			Count: dp.Count, Sum: &sum, Scale: dp.Scale, ZeroCount: dp.ZeroCount, ZeroThreshold: dp.ZeroThreshold,
			Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: dp.PositiveBucket.Offset, BucketCounts: dp.PositiveBucket.Counts},
			Negative: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: dp.NegativeBucket.Offset, BucketCounts: dp.NegativeBucket.Counts},
			Min:      extrema(dp.Min), Max: extrema(dp.Max),
		}
	}
	return out
}
