package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

// maxResponse bounds how much of a response body is read.
const maxResponse = 64 << 10

// retryable says whether a failed post is worth another try: the statuses
// the specification names, and a transport failure that another attempt
// can cure (refused or reset connection, a connection closed before the
// answer, a timeout of one attempt). Certificate and address errors, and
// the export's own deadline, are not.
func retryable(code int, err error) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case 0:
		var ne net.Error
		return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
			errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded)
	}
	return false
}

// userAgent names the exporter and the module version it was built from,
// as the specification asks of exporters.
var userAgent = func() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == module && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == module {
				v = d.Version
			}
		}
	}
	return "weir-otlp/" + v
}()

const module = "github.com/weirhost/weir"

// send POSTs body, an encoded message, retrying within the export timeout.
func (c *config) send(ctx context.Context, body []byte) error {
	if c.gzip {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(body)
		if err := w.Close(); err != nil {
			return fmt.Errorf("otlp: gzip: %w", err)
		}
		body = b.Bytes()
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	wait := 100 * time.Millisecond
	var last error // the last failure the deadline did not cause
	for {
		code, after, err := c.post(ctx, body)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			// The deadline cut this attempt short: what failed before it
			// says more than the cut does.
			if last == nil {
				last = err
			}
			return fmt.Errorf("%w (gave up retrying: %w)", last, context.Cause(ctx))
		}
		if !retryable(code, err) {
			return err
		}
		last = err
		d := wait
		if after > 0 {
			d = after
		}
		wait = min(2*wait, 5*time.Second)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// post makes one request; it returns the status and Retry-After of a
// failed one.
func (c *config) post(ctx context.Context, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, fmt.Errorf("otlp: request: %w", err)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", userAgent)
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the caller's configuration
		}
		return 0, 0, fmt.Errorf("otlp: post: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	var after time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		after = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(resp.Header.Get("Retry-After")); err == nil {
		after = max(time.Until(t), 0)
	}
	return resp.StatusCode, after, fmt.Errorf("otlp: the collector answered %s", resp.Status)
}
