package setup

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/weirhost/weir/examples/offline"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/config"
	"github.com/weirhost/weir/host/llm"
)

// Route is the route a Host's agents talk to.
type Route struct {
	// Name is the route's key in the configuration's models ("" for a
	// route made by hand). The host data names it.
	Name string
	// Route is the route as the agent loop sees it.
	Route host.Route
	// Tokenizer prices the route: "deepseek-v3", "heuristic", "o200k" or
	// "cl100k" ("" leaves the token meter's own choice).
	Tokenizer string
	// Model is the route's model client; nil for a Host that makes no
	// agents (Providers only).
	Model llm.Model
}

// MissingKeyError is the error of OpenRoute for a route whose API key
// variable is empty while its server is not on this machine.
type MissingKeyError struct {
	Route string // the route's name
	Env   string // the variable the route's apiKeyEnv names
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("route %q: no API key: $%s is empty", e.Route, e.Env)
}

// OpenRoute opens the configuration's route name: its host.Route, its
// tokenizer and its model client. The API key is getenv(apiKeyEnv); nil
// getenv reads no environment, so the key is empty. A route whose key is
// empty fails with a *MissingKeyError unless its base URL is on this
// machine (localhost, 127.0.0.0/8, ::1), since local servers need none.
// log receives the client's warnings (nil: none).
//
// A model of "offline:SCRIPT.json" is the offline scripted model playing
// that file; the route's provider is then "offline" and its model the
// file's name. The default configuration's script,
// examples/offline/tour.json, is built in: it is used when no such file
// exists.
func OpenRoute(cfg *config.Config, name string, getenv func(string) string, log hclog.Logger) (*Route, error) {
	hr, err := cfg.HostRoute(name)
	if err != nil {
		return nil, err
	}
	r := cfg.Models[name]
	out := &Route{Name: name, Route: hr, Tokenizer: r.Tokenizer}
	if path, ok := strings.CutPrefix(r.Model, "offline:"); ok {
		if out.Model, err = openOffline(path); err != nil {
			return nil, err
		}
		out.Route.Provider, out.Route.Model = "offline", filepath.Base(path)
		return out, nil
	}
	var key string
	if r.APIKeyEnv != "" {
		if getenv != nil {
			key = getenv(r.APIKeyEnv)
		}
		if key == "" && !isLoopback(r.BaseURL) {
			return nil, &MissingKeyError{Route: name, Env: r.APIKeyEnv}
		}
	}
	cc, err := cfg.ClientConfig(name, llm.Secret(key), log)
	if err != nil {
		return nil, err
	}
	if out.Model, err = llm.NewClient(cc); err != nil {
		return nil, err
	}
	return out, nil
}

// openOffline opens the offline model on a script file, or on the built-in
// tour when the default route's file does not exist.
func openOffline(path string) (llm.Model, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && filepath.ToSlash(filepath.Clean(path)) == offline.TourPath {
		data, err = offline.Tour, nil
	}
	if err != nil {
		return nil, fmt.Errorf("offline model: %w", err)
	}
	s, err := llm.ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("offline model script %s: %w", path, err)
	}
	return llm.NewScripted(s), nil
}

// isLoopback reports whether a base URL names this machine (localhost,
// 127.0.0.0/8 or ::1): a local server (Ollama, llama.cpp, vLLM) needs no
// API key.
func isLoopback(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
