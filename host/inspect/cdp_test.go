package inspect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A small client of the Chrome DevTools Protocol, enough for the browser
// tests: the browser is started with --remote-debugging-pipe, so it reads
// commands from its file descriptor 3 and writes answers and events to 4,
// each message one JSON object ended by a NUL byte. Tabs are targets
// attached in flat mode: a command to a tab carries its sessionId, and so
// does every event of it.

// cdpBrowser is a running browser and its pipe.
type cdpBrowser struct {
	cmd  *exec.Cmd
	in   io.WriteCloser // the browser's fd 3
	wmu  sync.Mutex     // one message at a time on in
	mu   sync.Mutex
	next int64
	wait map[int64]chan cdpMessage
	subs map[string][]func(method string, params json.RawMessage) // by sessionId
	done chan struct{}                                            // closed when the pipe ends
	err  error                                                    // why it ended
}

// cdpMessage is an answer or an event.
type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startBrowser starts path headless with args and the environment env.
func startBrowser(path string, args, env []string) (*cdpBrowser, error) {
	cmdIn, in, err := os.Pipe() // the browser reads commands from cmdIn (its fd 3)
	if err != nil {
		return nil, err
	}
	out, cmdOut, err := os.Pipe() // and writes to cmdOut (its fd 4)
	if err != nil {
		cmdIn.Close()
		in.Close()
		return nil, err
	}
	cmd := exec.Command(path, append([]string{"--remote-debugging-pipe"}, args...)...)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{cmdIn, cmdOut}
	if err := cmd.Start(); err != nil {
		cmdIn.Close()
		cmdOut.Close()
		in.Close()
		out.Close()
		return nil, err
	}
	cmdIn.Close()
	cmdOut.Close()
	b := &cdpBrowser{cmd: cmd, in: in, wait: map[int64]chan cdpMessage{},
		subs: map[string][]func(string, json.RawMessage){}, done: make(chan struct{})}
	go b.read(out)
	return b, nil
}

// read delivers the browser's messages until the pipe ends.
func (b *cdpBrowser) read(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var line []byte
		line, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m cdpMessage
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.Method == "" {
			if ch, ok := b.wait[m.ID]; ok {
				delete(b.wait, m.ID)
				ch <- m
			}
			b.mu.Unlock()
			continue
		}
		subs := b.subs[m.SessionID]
		b.mu.Unlock()
		for _, f := range subs {
			f(m.Method, m.Params)
		}
	}
	b.mu.Lock()
	b.err = fmt.Errorf("the browser's DevTools pipe ended: %w", err)
	b.mu.Unlock()
	close(b.done)
}

// call sends method with params to the session (the browser for "") and
// decodes the result into result, when not nil.
func (b *cdpBrowser) call(ctx context.Context, session, method string, params, result any) error {
	if params == nil {
		params = struct{}{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.wait[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMessage{ID: id, SessionID: session, Method: method, Params: p})
	if err != nil {
		return err
	}
	b.wmu.Lock()
	_, err = b.in.Write(append(msg, 0))
	b.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.wait, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case <-b.done:
		return fmt.Errorf("%s: %w", method, b.err)
	}
}

// close ends the browser, asking first.
func (b *cdpBrowser) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	b.in.Close()
	exited := make(chan struct{})
	go func() { b.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-exited
	}
}

// tab is one attached page target.
type tab struct {
	b       *cdpBrowser
	target  string
	session string
	ctx     context.Context // ends when the tab is closed
	cancel  func()
}

// newTab opens about:blank in a new target of width×height and attaches
// to it.
func (b *cdpBrowser) newTab(ctx context.Context, width, height int) (*tab, error) {
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	t := &tab{b: b, target: created.TargetID, session: attached.SessionID}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	for _, c := range []struct {
		method string
		params any
	}{
		{"Page.enable", nil},
		{"Runtime.enable", nil},
		{"Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}},
	} {
		if err := t.call(ctx, c.method, c.params, nil); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// listen calls f with every event of the tab.
func (t *tab) listen(f func(method string, params json.RawMessage)) {
	t.b.mu.Lock()
	t.b.subs[t.session] = append(t.b.subs[t.session], f)
	t.b.mu.Unlock()
}

func (t *tab) call(ctx context.Context, method string, params, result any) error {
	return t.b.call(ctx, t.session, method, params, result)
}

// close closes the tab's target.
func (t *tab) close() {
	t.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.b.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": t.target}, nil)
	t.b.mu.Lock()
	delete(t.b.subs, t.session)
	t.b.mu.Unlock()
}

// evaluate runs a JavaScript expression in the page, awaiting a promise,
// and decodes its value into out, when not nil. A thrown exception is the
// error.
func (t *tab) evaluate(ctx context.Context, expr string, out any) error {
	var res struct {
		Result struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := t.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception != nil {
			msg = e.Exception.Description
		}
		return fmt.Errorf("javascript: %s", msg)
	}
	if out == nil {
		return nil
	}
	v := res.Result.Value
	if len(v) == 0 { // undefined
		v = []byte("null")
	}
	return json.Unmarshal(v, out)
}

// step is one action on a tab.
type step func(ctx context.Context, t *tab) error

// poll evaluates the JavaScript condition cond until it is true. An
// evaluation that fails (a navigation replacing the document) is "not
// yet".
func poll(ctx context.Context, t *tab, cond string) error {
	var last error
	for {
		var ok bool
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := t.evaluate(c, "!!("+cond+")", &ok)
		cancel()
		if err == nil && ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", cond, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// navigate loads url and waits for its load event.
func navigate(url string) step {
	return func(ctx context.Context, t *tab) error {
		var res struct {
			LoaderID  string `json:"loaderId"`
			ErrorText string `json:"errorText"`
		}
		if err := t.call(ctx, "Page.navigate", map[string]any{"url": url}, &res); err != nil {
			return err
		}
		if res.ErrorText != "" {
			return fmt.Errorf("navigate to %s: %s", url, res.ErrorText)
		}
		u, _ := json.Marshal(url)
		return poll(ctx, t, `location.href === `+string(u)+` && document.readyState === "complete"`)
	}
}

// query is JavaScript for the first element sel selects.
func query(sel string) string {
	s, _ := json.Marshal(sel)
	return `document.querySelector(` + string(s) + `)`
}

// waitVisible waits until sel selects an element with a box that is not
// hidden.
func waitVisible(sel string) step {
	return func(ctx context.Context, t *tab) error {
		return poll(ctx, t, `(() => { const e = `+query(sel)+`; if (!e) return false;
			const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== "hidden"; })()`)
	}
}

// evalStep runs JavaScript for its effects.
func evalStep(expr string) step {
	return func(ctx context.Context, t *tab) error { return t.evaluate(ctx, expr, nil) }
}

// clickXY presses and releases the left mouse button at x, y.
func clickXY(x, y float64) step {
	return func(ctx context.Context, t *tab) error {
		for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
			p := map[string]any{"type": typ, "x": x, "y": y}
			if typ != "mouseMoved" {
				p["button"], p["clickCount"] = "left", 1
			}
			if err := t.call(ctx, "Input.dispatchMouseEvent", p, nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// click waits for sel to be visible, scrolls it into view and clicks its
// centre.
func click(sel string) step {
	return func(ctx context.Context, t *tab) error {
		if err := waitVisible(sel)(ctx, t); err != nil {
			return err
		}
		var p struct{ X, Y float64 }
		if err := t.evaluate(ctx, `(() => { const e = `+query(sel)+`; e.scrollIntoView({block: "center", inline: "center"});
			const r = e.getBoundingClientRect(); return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`, &p); err != nil {
			return err
		}
		return clickXY(p.X, p.Y)(ctx, t)
	}
}

// sendKeys focuses sel and types text; "\r" is the Enter key.
func sendKeys(sel, text string) step {
	return func(ctx context.Context, t *tab) error {
		if err := waitVisible(sel)(ctx, t); err != nil {
			return err
		}
		if err := t.evaluate(ctx, query(sel)+`.focus()`, nil); err != nil {
			return err
		}
		for _, part := range strings.SplitAfter(text, "\r") {
			if s := strings.TrimSuffix(part, "\r"); s != "" {
				if err := t.call(ctx, "Input.insertText", map[string]any{"text": s}, nil); err != nil {
					return err
				}
			}
			if strings.HasSuffix(part, "\r") {
				for _, typ := range []string{"keyDown", "keyUp"} {
					p := map[string]any{"type": typ, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
					if typ == "keyDown" {
						p["text"] = "\r"
					}
					if err := t.call(ctx, "Input.dispatchKeyEvent", p, nil); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
}

// captureScreenshot is the viewport as a PNG.
func (t *tab) captureScreenshot(ctx context.Context) ([]byte, error) {
	var res struct {
		Data string `json:"data"`
	}
	if err := t.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &res); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(res.Data)
	if err == nil && !bytes.HasPrefix(png, []byte("\x89PNG")) {
		err = errors.New("the screenshot is not a PNG")
	}
	return png, err
}
