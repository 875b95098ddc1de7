// Package otlp exports OpenTelemetry traces and metrics over OTLP/HTTP
// (http/protobuf) without the gRPC stack the upstream exporters pull in.
//
// A TraceExporter is a [sdktrace.SpanExporter] and a MetricExporter a
// [sdkmetric.Exporter]: the SDK batches and reads, this package converts what
// it is given into the OTLP protobuf messages (TracesData, MetricsData, which
// are wire-identical to the collector's export requests), written field by
// field with protowire (wire.go) rather than through generated types, and
// POSTs them as application/x-protobuf. The tests hold that encoding to the
// reference implementation's, byte for byte, and read what a loopback
// collector receives with the strict decoder of package otlptest.
//
// Configuration comes from the standard variables of the OTLP exporter
// specification, the signal form winning over the general one:
// OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT (the general endpoint gets
// /v1/traces or /v1/metrics appended, a signal endpoint is used as is),
// _HEADERS (key=value,... with URL-encoded values), _TIMEOUT (milliseconds,
// default 10000), _COMPRESSION (gzip or none), _CERTIFICATE,
// _CLIENT_CERTIFICATE and _CLIENT_KEY (PEM files). A request answered 429,
// 502, 503 or 504 is retried with exponential backoff, honouring Retry-After,
// within the export timeout; any other failure is an error carrying the HTTP
// status (never a header: they carry credentials). A partial success in the
// response is ignored. Exemplars are not exported.
package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// config is an exporter's resolved configuration.
type config struct {
	url     string
	headers map[string]string
	timeout time.Duration
	gzip    bool
	client  *http.Client
}

// loadConfig reads the variables for signal ("TRACES" or "METRICS", path
// "/v1/traces" or "/v1/metrics").
func loadConfig(getenv func(string) string, signal, path string) (*config, error) {
	get := func(suffix string) (string, string) {
		n := "OTEL_EXPORTER_OTLP_" + signal + "_" + suffix
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return n, v
		}
		n = "OTEL_EXPORTER_OTLP_" + suffix
		return n, strings.TrimSpace(getenv(n))
	}
	c := &config{timeout: 10 * time.Second, headers: map[string]string{}}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT")); v != "" {
		c.url = v
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		c.url = strings.TrimRight(v, "/") + path
	} else {
		c.url = "http://localhost:4318" + path
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlp: the endpoint for %s is not an http(s) URL", strings.ToLower(signal))
	}
	if n, v := get("HEADERS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("otlp: %s: an entry is not key=value", n)
			}
			dv, err := url.PathUnescape(strings.TrimSpace(val)) // "+" stays "+"
			if err != nil {
				return nil, fmt.Errorf("otlp: %s: the value of %q is not URL-encoded", n, k)
			}
			c.headers[k] = dv
		}
	}
	if n, v := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("otlp: %s=%q is not a number of milliseconds", n, v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	if n, v := get("COMPRESSION"); v != "" {
		switch strings.ToLower(v) {
		case "gzip":
			c.gzip = true
		case "none":
		default:
			return nil, fmt.Errorf("otlp: %s=%q: the compression is gzip or none", n, v)
		}
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	custom := false
	if n, v := get("CERTIFICATE"); v != "" {
		pem, err := os.ReadFile(v)
		if err != nil {
			return nil, fmt.Errorf("otlp: %s: %w", n, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otlp: %s: the file holds no PEM certificate", n)
		}
		tc.RootCAs, custom = pool, true
	}
	cn, cert := get("CLIENT_CERTIFICATE")
	kn, key := get("CLIENT_KEY")
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("otlp: %s and %s go together", cn, kn)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("otlp: %s, %s: %w", cn, kn, err)
		}
		tc.Certificates, custom = []tls.Certificate{pair}, true
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if custom {
		tr.TLSClientConfig = tc
	}
	c.client = &http.Client{Transport: tr}
	return c, nil
}
