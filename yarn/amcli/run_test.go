package amcli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// runAm runs am with args and a fixed environment.
func runAm(t *testing.T, d deps, envs map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	getenv := func(k string) string { return envs[k] }
	code := run(ctx, args, env{getenv: getenv, stdout: &out, stderr: &errb, deps: d})
	return code, out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), got)
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		err  string
		out  string
	}{
		{name: "no command", code: ExitUsage, err: "usage:"},
		{name: "help", args: []string{"--help"}, code: ExitOK, out: "am resources"},
		{name: "unknown command", args: []string{"deploy"}, code: ExitUsage, err: `unknown command "deploy"`},
		{name: "unknown flag", args: []string{"resources", "--bogus"}, code: ExitUsage, err: "unknown flag --bogus"},
		{name: "misspelt command", args: []string{"sumbit"}, code: ExitUsage, err: `unknown command "sumbit"; did you mean "submit"?`},
		{name: "misspelt flag", args: []string{"submit", "--detatch", "--", "true"}, code: ExitUsage, err: "unknown flag --detatch; did you mean --detach?"},
		{name: "help command", args: []string{"help", "status"}, code: ExitOK, out: "usage: am status"},
		{name: "help unknown command", args: []string{"help", "stauts"}, code: ExitUsage, err: `did you mean "status"?`},
		{name: "-D with a colon", args: []string{"resources", "-D", "k.password:hunter2"}, code: ExitUsage, err: `"k.password…"`},
		{name: "bad -D", args: []string{"resources", "-D", "novalue"}, code: ExitUsage, err: "novalue"},
		{name: "bad log level", args: []string{"resources", "--log-level", "loud"}, code: ExitUsage, err: `--log-level "loud"`},
		{name: "status without id", args: []string{"status"}, code: ExitUsage, err: "want exactly one application id"},
		{name: "status bad id", args: []string{"status", "app_1"}, code: ExitUsage, err: `"app_1" is not an application id`},
		{name: "submit without worker", args: []string{"submit", "--workers", "2"}, code: ExitUsage, err: "no worker command"},
		{name: "run without worker", args: []string{"run"}, code: ExitUsage, err: "no worker command"},
		{name: "workers 0", args: []string{"resources", "--conf", "testdata/flink-conf.yaml", "--workers", "0"}, code: ExitUsage, err: "--workers 0: must be at least 1"},
		{name: "workers negative", args: []string{"submit", "--workers=-2", "--", "true"}, code: ExitUsage, err: "--workers -2: must be at least 1"},
		{name: "run workers 0", args: []string{"run", "--workers", "0", "--", "true"}, code: ExitUsage, err: "--workers 0"},
		{name: "missing conf file", args: []string{"resources", "--conf", "testdata/nope.yaml"}, code: ExitConfig, err: "testdata/nope.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runAm(t, deps{}, nil, tt.args...)
			require.Equal(t, tt.code, code, stderr)
			require.Contains(t, stderr, tt.err)
			require.Contains(t, out, tt.out)
		})
	}
}

func TestResources(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml")
	require.Equal(t, ExitOK, code, stderr)
	golden(t, "resources.golden.txt", out)

	code, out, stderr = runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "--json", "-Dexternal-resource.gpu.amount=2", "--workers", "3")
	require.Equal(t, ExitOK, code, stderr)
	golden(t, "resources.golden.json", out)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 3, rep.Plan.Workers)
	require.Equal(t, map[string]int64{"yarn.io/gpu": 2}, rep.Plan.Profile.Extra)
}

func TestResourcesFromEnvironmentDefaults(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, map[string]string{"FLINK_CONF_DIR": "testdata/none"}, "resources")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "configuration: none (Flink defaults)")
	require.Contains(t, out, "YARN container profile per worker: <memory:1728, vCores:1>")
}

func TestResourcesErrors(t *testing.T) {
	code, out, stderr := runAm(t, deps{}, nil, "resources", "--conf", "testdata/bad.yaml")
	require.Equal(t, ExitConfig, code, stderr)
	golden(t, "resources-bad.golden.txt", out)
	require.Contains(t, stderr, "configuration error(s), listed above")

	code, out, _ = runAm(t, deps{}, nil, "resources", "--conf", "testdata/flink-conf.yaml", "--json", "--strict",
		"-D", "external-resource.gpu.driver-factory.class=")
	require.Equal(t, ExitConfig, code)
	var rep resourcesReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Empty(t, rep.Warnings)
	require.NotEmpty(t, rep.Errors)
	require.Contains(t, rep.Errors[0].Key, "external-resource.gpu.driver-factory.class")
}

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	j := fs.Bool("json", false, "")
	var d conf.DynamicFlag
	fs.Var(&d, "D", "")
	pos, rest, err := parse(fs, []string{"application_1_1", "--json", "-Dk=v", "--", "--json", "x"})
	require.NoError(t, err)
	require.True(t, *j)
	require.Equal(t, []string{"application_1_1"}, pos)
	require.Equal(t, []string{"--json", "x"}, rest)
	require.Equal(t, []string{"k=v"}, d.Values)
}

func TestAppIDFromContainer(t *testing.T) {
	tests := map[string]string{
		"container_1700000000000_0001_01_000001":     "application_1700000000000_0001",
		"container_e17_1700000000000_0002_01_000005": "application_1700000000000_0002",
		"":              "",
		"container_1_2": "",
		"task_1_2_3_4":  "",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			require.Equal(t, want, appIDFromContainer(in))
		})
	}
}

func TestUsageMentionsEveryCommand(t *testing.T) {
	for _, c := range []string{"submit", "run", "status", "list", "logs", "kill", "cluster", "resources", "--version"} {
		require.True(t, strings.Contains(usageText(), "am "+c), c)
	}
}

// am <command> --help prints that command's usage and its flags on stdout
// and exits 0 (not "flag: help requested", exit 2, and the global usage).
func TestSubcommandHelp(t *testing.T) {
	for _, c := range commands {
		for _, flagName := range []string{"--help", "-h"} {
			t.Run(c.name+flagName, func(t *testing.T) {
				code, out, stderr := runAm(t, deps{}, nil, c.name, flagName)
				require.Equal(t, ExitOK, code, stderr)
				require.Empty(t, stderr)
				require.True(t, strings.HasPrefix(out, "usage: am "+c.name), out)
				require.Contains(t, out, "-log-level")
				require.Contains(t, out, "exit codes:")
				require.NotContains(t, out, "help requested")
			})
		}
	}
	_, out, _ := runAm(t, deps{}, nil, "submit", "--help")
	for _, f := range []string{"-workers", "-detach", "-queue", "-files", "-launcher", "-rest", "-conf"} {
		require.Contains(t, out, f)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var out, errb strings.Builder
		code := Main(context.Background(), []string{arg}, Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb, Version: "am v9 (test)\n"})
		require.Equal(t, ExitOK, code, errb.String())
		require.Equal(t, "am v9 (test)\n", out.String())
	}
}

// The exit codes the usage text lists are the constants' values, each
// with its meaning (Exits).
func TestUsageExitCodesMatchTheCode(t *testing.T) {
	codes := []int{ExitOK, ExitAppFailed, ExitUsage, ExitConfig, ExitCluster}
	require.Len(t, Exits, len(codes))
	for i, code := range codes {
		require.Equal(t, code, Exits[i].Code, "Exits is in code order")
		require.Regexp(t, fmt.Sprintf(`(?m)^  %d  `, code), exitCodesText)
	}
	for _, what := range []string{"FAILED or KILLED", "bad command line", "configuration:", "could not be reached", "refuses (its exit 211)"} {
		require.Contains(t, strings.Join(strings.Fields(exitCodesText), " "), what)
	}
	require.NotContains(t, exitCodesText, "`", "code spans are unmarked in the terminal")
	for _, l := range strings.Split(exitCodesText, "\n") {
		require.LessOrEqual(t, len(l), 100, l)
	}
}

// TestReadmeAmExitCodes: am's exit-code tables in the README and in
// cmd/am/README.md are Exits, both ways: every code with its meaning, and
// nothing else.
func TestReadmeAmExitCodes(t *testing.T) {
	want := map[string]string{}
	for _, e := range Exits {
		want[strconv.Itoa(e.Code)] = e.Meaning
	}
	for _, path := range []string{"../../README.md", "../../cmd/am/README.md"} {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := strings.Split(string(b), "\n")
			i := slices.Index(lines, "| code | meaning |")
			require.GreaterOrEqual(t, i, 0, "%s has am's exit-code table", path)
			got := map[string]string{}
			for _, r := range lines[i+2:] {
				if !strings.HasPrefix(r, "|") {
					break
				}
				cells := strings.Split(strings.Trim(r, "| "), " | ")
				require.Len(t, cells, 2, "row %q", r)
				_, dup := got[cells[0]]
				require.False(t, dup, "code %s listed twice", cells[0])
				got[cells[0]] = cells[1]
			}
			require.Equal(t, want, got, "the table is amcli.Exits; fix the one that is wrong")
		})
	}
}
