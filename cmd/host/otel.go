package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/otlp"
)

// The commands that run an agent (run, demo, compact) export OpenTelemetry
// traces and metrics over OTLP/HTTP (protobuf) when the standard variables
// name an endpoint:
//
//   - OTEL_EXPORTER_OTLP_ENDPOINT: traces and metrics (the paths /v1/traces
//     and /v1/metrics are appended);
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT:
//     one signal, at that exact URL;
//   - OTEL_SDK_DISABLED=true exports nothing; OTEL_TRACES_EXPORTER=none or
//     OTEL_METRICS_EXPORTER=none turns one signal off.
//
// The exporters (package host/otlp) read the other OTEL_EXPORTER_OTLP_*
// variables themselves (headers, timeout, compression, certificates), the SDK OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and the batching ones. What
// is recorded is flushed when the command ends, also on an error or an
// interrupt (a second Ctrl-C quits at once, without it). Nothing of the
// variables is ever printed: headers carry credentials.

// otelFlushTimeout bounds the export at exit, so that a collector that is
// down cannot hold the command.
const otelFlushTimeout = 5 * time.Second

// cliOtel is the command's telemetry, set up the first time an agent is
// configured (limits) so that commands that run none never start an
// exporter.
var cliOtel struct {
	mu     sync.Mutex
	done   bool
	stderr io.Writer
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	errs   atomic.Int64
}

// runWithTelemetry runs a command, then flushes and stops what it exported.
func runWithTelemetry(e *env, c *command, args []string) error {
	cliOtel.mu.Lock()
	cliOtel.done, cliOtel.stderr, cliOtel.tp, cliOtel.mp = false, e.stderr, nil, nil
	cliOtel.errs.Store(0)
	cliOtel.mu.Unlock()
	err := c.run(e, args)
	flushTelemetry()
	return err
}

// withTelemetry gives an agent's configuration the command's tracer and
// meter providers, when the environment asks for an export.
func withTelemetry(c host.Config) host.Config {
	cliOtel.mu.Lock()
	defer cliOtel.mu.Unlock()
	if !cliOtel.done {
		cliOtel.done = true
		cliOtel.tp, cliOtel.mp = startTelemetry(os.Getenv, cliOtel.stderr)
	}
	if cliOtel.tp != nil {
		c.TracerProvider = cliOtel.tp
	}
	if cliOtel.mp != nil {
		c.MeterProvider = cliOtel.mp
	}
	return c
}

// otelWarn prints a telemetry warning; export failures after the first are
// only counted (a collector that is down fails every batch).
func otelWarn(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "%s: telemetry: %s\n", prog, termLine(fmt.Sprintf(format, args...)))
	}
}

// startTelemetry builds the providers the environment asks for (nil, nil
// when none).
func startTelemetry(getenv func(string) string, stderr io.Writer) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	set := func(names ...string) bool {
		for _, n := range names {
			if strings.TrimSpace(getenv(n)) != "" {
				return true
			}
		}
		return false
	}
	off := func(name string) bool { return strings.EqualFold(strings.TrimSpace(getenv(name)), "none") }
	traces := set("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") && !off("OTEL_TRACES_EXPORTER")
	metrics := set("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") && !off("OTEL_METRICS_EXPORTER")
	if !traces && !metrics {
		return nil, nil
	}
	for _, n := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(n)); p != "" && p != "http/protobuf" {
			otelWarn(stderr, "%s=%s is not supported: exporting OTLP over HTTP (http/protobuf)", n, p)
		}
	}
	// The SDK reports failed exports here rather than to the standard
	// logger: the first is printed, the others counted.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if cliOtel.errs.Add(1) == 1 {
			otelWarn(stderr, "export failed: %v", err)
		}
	}))
	ctx := context.Background()
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("weir")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		otelWarn(stderr, "resource: %v", err) // a partial resource is still usable
	}
	var (
		tp *sdktrace.TracerProvider
		mp *sdkmetric.MeterProvider
	)
	if traces {
		exp, err := otlp.NewTraceExporter(getenv)
		if err != nil {
			otelWarn(stderr, "traces are not exported: %v", err)
		} else {
			tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		}
	}
	if metrics {
		exp, err := otlp.NewMetricExporter(getenv)
		if err != nil {
			otelWarn(stderr, "metrics are not exported: %v", err)
		} else {
			mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		}
	}
	return tp, mp
}

// flushTelemetry exports what is left and stops the providers, within
// otelFlushTimeout.
func flushTelemetry() {
	cliOtel.mu.Lock()
	tp, mp, stderr := cliOtel.tp, cliOtel.mp, cliOtel.stderr
	cliOtel.tp, cliOtel.mp = nil, nil
	cliOtel.mu.Unlock()
	if tp == nil && mp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), otelFlushTimeout)
	defer cancel()
	var errs []error
	if tp != nil {
		errs = append(errs, tp.Shutdown(ctx))
	}
	if mp != nil {
		errs = append(errs, mp.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil && cliOtel.errs.Add(1) == 1 {
		otelWarn(stderr, "flush failed: %v", err)
	}
	if n := cliOtel.errs.Load(); n > 1 {
		otelWarn(stderr, "%d OpenTelemetry export failures in all", n)
	}
}
