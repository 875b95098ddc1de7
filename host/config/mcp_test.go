package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/host/config"
)

func TestMCPServers(t *testing.T) {
	file := `mcp:
  servers:
    files:
      command: mcp-files
      args: [--root, ., -v]
      env:
        FILES_TOKEN: "${HOST_FILES_TOKEN}"
        MODE: ro
    github:
      url: https://mcp.example/mcp
      headers:
        Authorization: "Bearer ${GITHUB_TOKEN}"
        X-Client: weir
      timeout: 20s
      maxResultKiB: 64
      failures: 5
tools:
  policy:
    "github__*": ask
    github__get_issue: allow
    "*": deny
`
	cfg, _, err := load(t, setup(t, map[string]string{"weir.yaml": file}), []string{"WEIR_MCP__SERVERS__FILES__TIMEOUT=5s"})
	require.NoError(t, err)
	assert.Equal(t, map[string]*config.MCPServer{
		"files": {Command: "mcp-files", Args: []string{"--root", ".", "-v"},
			Env: map[string]string{"FILES_TOKEN": "${HOST_FILES_TOKEN}", "MODE": "ro"}, Headers: map[string]string{},
			Timeout: 5 * time.Second, MaxResultKiB: 256, Failures: 3},
		"github": {URL: "https://mcp.example/mcp", Args: []string{}, Env: map[string]string{},
			Headers: map[string]string{"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Client": "weir"},
			Timeout: 20 * time.Second, MaxResultKiB: 64, Failures: 5},
	}, cfg.MCP.Servers)
	assert.Equal(t, map[string]string{"github__*": "ask", "github__get_issue": "allow", "*": "deny"}, cfg.Tools.Policy)
}

func TestMCPProblems(t *testing.T) {
	const secret = "ghp_literal_secret_value"
	for _, c := range []struct {
		name, file, key string
		want            []string
	}{
		{"no server", "mcp:\n  servers:\n    a:\n      timeout: 5s\n", "mcp.servers.a", []string{"give command", "or url"}},
		{"both", "mcp:\n  servers:\n    a:\n      command: x\n      url: http://h/\n", "mcp.servers.a.url", []string{"not both"}},
		{"bad url", "mcp:\n  servers:\n    a:\n      url: ftp://h/\n", "mcp.servers.a.url", []string{"http(s) URL"}},
		{"name with __", "mcp:\n  servers:\n    a__b:\n      command: x\n", "mcp.servers.a__b", []string{`cannot contain "__"`}},
		{"literal secret header", "mcp:\n  servers:\n    a:\n      url: https://h/\n      headers:\n        Authorization: Bearer " + secret + "\n",
			"mcp.servers.a.headers.Authorization", []string{"looks like a secret", "${NAME}"}},
		{"literal secret env", "mcp:\n  servers:\n    a:\n      command: x\n      env:\n        API_KEY: " + secret + "\n",
			"mcp.servers.a.env.API_KEY", []string{"looks like a secret"}},
		{"headers on stdio", "mcp:\n  servers:\n    a:\n      command: x\n      headers:\n        X: y\n", "mcp.servers.a.headers", []string{"HTTP server"}},
		{"zero timeout", "mcp:\n  servers:\n    a:\n      command: x\n      timeout: 0s\n", "mcp.servers.a.timeout", []string{"positive duration"}},
		{"cap", "mcp:\n  servers:\n    a:\n      command: x\n      maxResultKiB: 0\n", "mcp.servers.a.maxResultKiB", []string{"1..65536"}},
		{"breaker", "mcp:\n  servers:\n    a:\n      command: x\n      failures: 0\n", "mcp.servers.a.failures", []string{"at least 1"}},
		{"rule", "tools:\n  policy:\n    read_file: alow\n", "tools.policy.read_file", []string{`"alow" is not a rule`, `did you mean "allow"?`}},
		{"pattern", "tools:\n  policy:\n    \"a*b\": allow\n", "tools.policy.a*b", []string{"not a valid name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, setup(t, map[string]string{"weir.yaml": c.file}), nil)
			problem(t, err, c.key, c.want...)
			assert.NotContains(t, err.Error(), secret, "a secret is never repeated")
		})
	}
}
