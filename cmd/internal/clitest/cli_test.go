package clitest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// am and launcher are the binaries TestMain builds, as make build does.
var am, launcher string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xres-clitest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		am, launcher = filepath.Join(dir, "am"), filepath.Join(dir, "container-launcher")
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) error {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator),
		"github.com/xres/xres/cmd/am", "github.com/xres/xres/cmd/container-launcher")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs bin with args in dir, in an environment without a Flink or
// Hadoop configuration.
func run(t *testing.T, dir, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s %q: %v", bin, args, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func name(bin string) string { return filepath.Base(bin) }

// secret stands for every secret in TestSecretsNeverShown.
const secret = "hunter2s3cr3t"

// secretHost is a folder with a configuration whose GPU discovery script
// takes secrets in its args and fails, echoing them; one with a param with
// a secret-looking name (token/); one with a worker group whose command
// takes secrets (groups/); and dynamic files with a secret in a key and in a
// value of the wrong type.
func secretHost(t *testing.T) string {
	dir := t.TempDir()
	script := filepath.Join(dir, "discover.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"bad arguments: $*\" >&2\nexit 1\n"), 0o755))
	conf := strings.Join([]string{
		"external-resources: gpu",
		"external-resource.gpu.amount: 1",
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"external-resource.gpu.param.discovery-script.path: " + script,
		"external-resource.gpu.param.discovery-script.args: --password " + secret + " -p " + secret + " -p" + secret +
			" --api-token=" + secret + " --url https://user:" + secret + "@example.com/x",
		"external-resource.gpu.param.coordination.file: " + filepath.Join(dir, "coordination.state"),
		"",
	}, "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flink-conf.yaml"), []byte(conf), 0o644))
	withToken := conf + "external-resource.gpu.param.api-token: " + secret + "\n"
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "token"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token", "flink-conf.yaml"), []byte(withToken), 0o644))
	groups := strings.Join([]string{
		"xres.worker-groups: trainer",
		"external-resource.gpu.yarn.config-key: yarn.io/gpu",
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"xres.worker-group.trainer.external-resources: gpu",
		"xres.worker-group.trainer.external-resource.gpu.amount: 1",
		"xres.worker-group.trainer.command: python train.py --db-password=" + secret + " -p " + secret,
		"",
	}, "\n")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "groups"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "groups", "flink-conf.yaml"), []byte(groups), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.json"), []byte(`{"k.password=`+secret+`": ""}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "type.json"), []byte(`{"k.password": ["`+secret+`"]}`), 0o600))
	return dir
}

// TestSecretsNeverShown runs every command where a secret can reach its
// output: a -D written wrong (each way, in each command that takes -D), a
// dynamic file written wrong, `am resources` showing a discovery script's
// args and params, a failing discovery script (run, check, probe) that
// echoes its args. Each exits with its code, names the key (or the flag)
// whose value it hides, and shows the secret nowhere.
func TestSecretsNeverShown(t *testing.T) {
	dir := secretHost(t)
	type tc struct {
		label string // tells apart cases whose arguments read the same
		bin   string
		args  []string
		code  int
		names string // what the output must name instead of the value
	}
	var cases []tc

	// -D, each way it can be written wrong, in each command taking it.
	dForms := []struct {
		form string
		args []string
	}{
		{"colon", []string{"-D", "k.password:" + secret}},
		{"glued colon", []string{"-Dk.password:" + secret}},
		{"-D=", []string{"-D=k.password:" + secret}},
		{"space in one argument", []string{"-D", "k.password " + secret}},
		{"space", []string{"-D", "k.password", secret}},
		{"glued space", []string{"-Dk.password", secret}},
	}
	for _, cmd := range []struct {
		bin    string
		before []string
		after  []string
		code   int
	}{
		{am, []string{"submit"}, []string{"--", "true"}, 2},
		{am, []string{"run"}, []string{"--", "true"}, 2},
		{am, []string{"resources", "--offline"}, nil, 2},
		{am, []string{"render", "kubernetes", "--image", "img"}, []string{"--", "true"}, 2},
		{launcher, nil, []string{"--", "true"}, 210},
		{launcher, []string{"check"}, nil, 210},
		{launcher, []string{"probe", "--json"}, nil, 210},
	} {
		for _, d := range dForms {
			args := append(append(append([]string{}, cmd.before...), d.args...), cmd.after...)
			cases = append(cases, tc{d.form, cmd.bin, args, cmd.code, `"k.password`})
		}
	}
	// Dynamic files: a secret in a key, a value that is no string.
	for _, f := range []string{"key.json", "type.json"} {
		cases = append(cases,
			tc{"", am, []string{"resources", "--offline", "--dynamic-file", f}, 3, "k.password"},
			tc{"", launcher, []string{"--dynamic-file", f, "--", "true"}, 211, "k.password"},
			tc{"", launcher, []string{"check", "--dynamic-file", f}, 211, "k.password"})
	}
	cases = append(cases,
		// Spark's --conf form, written wrong.
		tc{"", am, []string{"resources", "--offline", "--spark", "spark.k.password:" + secret}, 3, "spark.k.password"},
		// am resources shows the script's args and the params.
		tc{"", am, []string{"resources", "--offline", "--conf", "."}, 0, "external-resource.gpu.param.discovery-script.args = --password (hidden)"},
		tc{"", am, []string{"resources", "--offline", "--conf", ".", "--json"}, 0, `"discovery-script.args": "--password (hidden)`},
		tc{"", am, []string{"resources", "--offline", "--conf", "token", "--json"}, 0, `"api-token": "(hidden)"`},
		tc{"", am, []string{"resources", "--offline", "--conf", "token"}, 0, "external-resource.gpu.param.api-token = (hidden)"},
		// A worker group's command, in text and JSON.
		tc{"", am, []string{"resources", "--offline", "--conf", "groups"}, 0, "command: python train.py --db-password=(hidden) -p (hidden)"},
		tc{"", am, []string{"resources", "--offline", "--conf", "groups", "--json"}, 0, `"--db-password=(hidden)"`},
		// The script fails, echoing its args: run, check, probe.
		tc{"", launcher, []string{"--conf", ".", "--", "true"}, 212, "--password (hidden) -p (hidden) -p(hidden) --api-token=(hidden)"},
		tc{"", launcher, []string{"--conf", ".", "--log-level", "trace", "--", "true"}, 212, "--password (hidden)"},
		tc{"", launcher, []string{"check", "--conf", "."}, 212, "--password (hidden)"},
		tc{"", launcher, []string{"check", "--conf", "token"}, 212, "--password (hidden)"},
		tc{"", launcher, []string{"probe", "--conf", "."}, 212, "--password (hidden)"},
		tc{"", launcher, []string{"probe", "--conf", ".", "--json"}, 212, "--password (hidden)"},
	)
	for _, c := range cases {
		label := name(c.bin) + " " + strings.Join(c.args, " ")
		if c.label != "" {
			label = c.label + ": " + label
		}
		t.Run(label, func(t *testing.T) {
			r := run(t, dir, c.bin, c.args...)
			all := r.stdout + r.stderr
			require.Equal(t, c.code, r.code, all)
			require.Contains(t, all, c.names)
			require.NotContains(t, all, secret)
			require.NotContains(t, all, "hunter2", "no part of the secret either")
		})
	}
}

// TestUsageMistakes: a mistyped subcommand or flag is a usage error (am 2,
// container-launcher 210) that names what was meant; help exits 0 with
// the help asked for.
func TestUsageMistakes(t *testing.T) {
	dir := t.TempDir()
	const out, errOut = "stdout", "stderr"
	for _, c := range []struct {
		bin    string
		args   []string
		code   int
		stream string
		want   []string
		not    []string
	}{
		// am
		{am, []string{"sumbit", "--", "true"}, 2, errOut, []string{`am: unknown command "sumbit"; did you mean "submit"?`}, nil},
		{am, []string{"deploy"}, 2, errOut, []string{`unknown command "deploy"`, "am --help"}, []string{"did you mean"}},
		{am, []string{"--verison"}, 2, errOut, []string{`did you mean "--version"?`}, nil},
		{am, []string{"submit", "--detatch", "--", "true"}, 2, errOut, []string{"unknown flag --detatch; did you mean --detach?"}, nil},
		{am, []string{"submit", "--wokers", "3", "--", "true"}, 2, errOut, []string{"unknown flag --wokers; did you mean --workers?"}, nil},
		{am, []string{"resources", "--bogus"}, 2, errOut, []string{"unknown flag --bogus"}, []string{"did you mean"}},
		{am, []string{"status", "--jsno", "application_1_1"}, 2, errOut, []string{"did you mean --json?"}, nil},
		{am, []string{"render", "kuberntes", "--image", "i", "--", "true"}, 2, errOut, []string{`did you mean "kubernetes"?`}, nil},
		{am, []string{"help", "submit"}, 0, out, []string{"usage: am submit", "-workers", "exit codes:"}, []string{"am list", "am kill APP_ID"}},
		{am, []string{"help", "resources"}, 0, out, []string{"usage: am resources", "-offline"}, nil},
		{am, []string{"help", "nosuch"}, 2, errOut, []string{`am help: unknown command "nosuch"`}, nil},
		{am, []string{"help", "sumbit"}, 2, errOut, []string{`unknown command "sumbit"; did you mean "submit"?`}, nil},
		{am, []string{"help"}, 0, out, []string{"am submit", "am resources"}, nil},
		{am, []string{"submit", "--help"}, 0, out, []string{"usage: am submit"}, nil},
		{am, []string{"-version"}, 0, out, []string{"am ", "tested against"}, nil},
		{am, nil, 2, errOut, []string{"usage:"}, nil},
		// container-launcher
		{launcher, []string{"--cnof", "x", "--", "true"}, 210, errOut, []string{"unknown flag --cnof; did you mean --conf?"}, nil},
		{launcher, []string{"check", "--strcit"}, 210, errOut, []string{"did you mean --strict?"}, nil},
		{launcher, []string{"probe", "--jsno"}, 210, errOut, []string{"did you mean --json?"}, nil},
		{launcher, []string{"chek"}, 210, errOut, []string{`"chek" is not a subcommand (did you mean "check"?); to run a worker named chek, put -- before it`}, nil},
		{launcher, []string{"prbe", "--json"}, 210, errOut, []string{`(did you mean "probe"?)`}, nil},
		{launcher, []string{"--log-level", "warn", "check"}, 210, errOut, []string{`"check" is a subcommand: give it first`, "put -- before it"}, nil},
		{launcher, []string{"--", "chek"}, 213, errOut, []string{`"chek"`}, []string{"subcommand"}},
		{launcher, []string{"check", "--help"}, 0, out, []string{"container-launcher check [flags]", "--conf", "exit codes"}, []string{"probe [flags]", "--per-device"}},
		{launcher, []string{"probe", "-h"}, 0, out, []string{"container-launcher probe [flags]", "--json"}, []string{"check [flags]"}},
		{launcher, []string{"help", "check"}, 0, out, []string{"container-launcher check [flags]"}, []string{"probe [flags]"}},
		{launcher, []string{"help", "chek"}, 210, errOut, []string{`did you mean "check"?`}, nil},
		{launcher, []string{"help"}, 0, out, []string{"container-launcher probe", "--per-device"}, nil},
		{launcher, []string{"--help"}, 0, out, []string{"container-launcher probe", "--per-device"}, nil},
		{launcher, []string{"--conf", "x", "--help"}, 0, out, []string{"--per-device"}, nil},
		{launcher, []string{"-version"}, 0, out, []string{"container-launcher ", "tested against"}, nil},
		{launcher, []string{"--version"}, 0, out, []string{"container-launcher ", "tested against"}, nil},
		{launcher, []string{"version"}, 0, out, []string{"container-launcher ", "tested against"}, nil},
	} {
		t.Run(name(c.bin)+" "+strings.Join(c.args, " "), func(t *testing.T) {
			r := run(t, dir, c.bin, c.args...)
			require.Equal(t, c.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			got := r.stderr
			if c.stream == out {
				got = r.stdout
				if c.code == 0 {
					require.Empty(t, r.stderr)
				}
			}
			for _, w := range c.want {
				require.Contains(t, got, w)
			}
			for _, n := range c.not {
				require.NotContains(t, got, n)
			}
		})
	}
}
