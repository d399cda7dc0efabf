package amplan

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{name: "plain", argv: []string{"./container-launcher", "--", "python", "train.py"},
			want: "./container-launcher -- python train.py 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
		{name: "spaces and quotes", argv: []string{"sh", "-c", `echo "it's $HOME"`},
			want: `sh -c 'echo \"it'\\''s \$HOME\"' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr`},
		{name: "empty argument", argv: []string{"a", ""},
			want: "a '' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Command(tt.argv))
		})
	}
}

// TestCommandThroughLaunchScript runs commands the way the NodeManager's
// launch script does (exec /bin/bash -c "<command>", <LOG_DIR> replaced)
// and checks every argument arrives unchanged and the output lands in the
// log folder.
func TestCommandThroughLaunchScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	args := []string{"plain", "two words", `dollar $HOME`, "back`tick`", `back\slash`, `"double"`, "it's", "", "semi;colon", "glob*", "new\nline", "{{VAR}}x"}
	for i, arg := range args {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			dir := t.TempDir()
			cmd := Command([]string{"printf", "[%s]", arg})
			cmd = strings.ReplaceAll(cmd, LogDir, dir)
			script := filepath.Join(dir, "launch_container.sh")
			require.NoError(t, os.WriteFile(script, []byte("#!/bin/bash\nexec /bin/bash -c \""+cmd+"\"\n"), 0o700))
			out, err := exec.Command(bash, script).CombinedOutput()
			require.NoError(t, err, string(out))
			stdout, err := os.ReadFile(filepath.Join(dir, "stdout"))
			require.NoError(t, err)
			require.Equal(t, "["+arg+"]", string(stdout))
			_, err = os.Stat(filepath.Join(dir, "stderr"))
			require.NoError(t, err, "stderr is redirected into the log folder")
		})
	}
}

func TestEnvFromConfig(t *testing.T) {
	cfg := confOf(map[string]string{
		"containerized.taskmanager.env.LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
		"containerized.taskmanager.env.FOO":             "bar",
		"containerized.taskmanager.env.":                "ignored",
		"containerized.master.env.JAVA_HOME":            "/jdk",
		"parallelism.default":                           "4",
	})
	require.Equal(t, map[string]string{"LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "FOO": "bar"}, EnvFromConfig(cfg, WorkerEnvPrefix))
	require.Equal(t, map[string]string{"JAVA_HOME": "/jdk"}, EnvFromConfig(cfg, MasterEnvPrefix))
}

func TestLaunchContextStringHidesSecrets(t *testing.T) {
	l := yarn.LaunchContext{Commands: []string{"x"}, Env: map[string]string{"TOKEN": "hunter2"}, Tokens: []byte("HDTSsecret")}
	s := l.String()
	require.NotContains(t, s, "hunter2")
	require.NotContains(t, s, "secret")
	require.Contains(t, s, "TOKEN")
}

func TestResourceURL(t *testing.T) {
	require.Equal(t, "hdfs://nn:8020/user/u/.xres/app/am", yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/user/u/.xres/app/am"}.String())
	require.Equal(t, "file:///tmp/x", yarn.ResourceURL{Scheme: "file", File: "/tmp/x"}.String())
}

func TestWorkerLaunch(t *testing.T) {
	r := yarn.LocalResource{URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/x"}, Size: 3, Timestamp: 4, Type: yarn.File, Visibility: yarn.Application}
	lc := WorkerLaunch(WorkerSpec{
		Resources:   map[string]yarn.LocalResource{"am": r, "container-launcher": r, "flink-conf.yaml": r},
		ConfName:    "flink-conf.yaml",
		DynamicFile: "xres-dynamic.json",
		Dynamic:     []string{"external-resource.gpu.amount=1"},
		Worker:      []string{"bash", "-c", "echo $CUDA_VISIBLE_DEVICES"},
		Env:         map[string]string{contract.EnvReportURL: "http://am:1/api/report"},
	})
	require.Equal(t, []string{`./container-launcher --conf flink-conf.yaml --dynamic-file xres-dynamic.json -D external-resource.gpu.amount=1 -- bash -c 'echo \$CUDA_VISIBLE_DEVICES' 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr`}, lc.Commands)
	require.Equal(t, []string{"container-launcher", "flink-conf.yaml"}, sortedKeys(lc.LocalResources))
	require.Equal(t, "http://am:1/api/report", lc.Env[contract.EnvReportURL])
}

// TestNullWorkerLaunch: the benchmark floor starts the worker command
// alone, with the same environment and credentials, no launcher and
// nothing to localize.
func TestNullWorkerLaunch(t *testing.T) {
	r := yarn.LocalResource{URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/x"}, Size: 3, Timestamp: 4, Type: yarn.File, Visibility: yarn.Application}
	lc := NullWorkerLaunch(WorkerSpec{
		Resources: map[string]yarn.LocalResource{"am": r, "container-launcher": r, "flink-conf.yaml": r},
		ConfName:  "flink-conf.yaml",
		Worker:    []string{"sleep", "300"},
		Env:       map[string]string{contract.EnvReportURL: "http://am:1/api/report"},
		Tokens:    []byte("creds"),
	})
	require.Equal(t, []string{"sleep 300 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"}, lc.Commands)
	require.Empty(t, lc.LocalResources)
	require.Equal(t, "http://am:1/api/report", lc.Env[contract.EnvReportURL])
	require.Equal(t, []byte("creds"), lc.Tokens)
}
