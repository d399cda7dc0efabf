package submit

import (
	"bytes"
	"context"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
)

const sentinelSecret = "xres-sentinel-secret"

// localModeFS records the permissions of every local file it stages.
type localModeFS struct {
	*memFS
	modes map[string]os.FileMode // remote base name → local file mode
	local map[string]string      // remote base name → local path
}

func (l *localModeFS) CopyToRemote(ctx context.Context, local, remote string) error {
	st, err := os.Stat(local)
	if err != nil {
		return err
	}
	l.modes[path.Base(remote)] = st.Mode().Perm()
	l.local[path.Base(remote)] = local
	return l.memFS.CopyToRemote(ctx, local, remote)
}

// TestSubmitStagesDynamicOverrides: the -D overrides travel in a staged
// file (0600 locally, an APPLICATION resource like the others); the
// submission context names the file and carries no value.
func TestSubmitStagesDynamicOverrides(t *testing.T) {
	rm := gpuRM()
	fs := &localModeFS{memFS: newMemFS(), modes: map[string]os.FileMode{}, local: map[string]string{}}
	req := testRequest(t)
	req.Dynamic = []string{"s3.secret-key=" + sentinelSecret, "parallelism.default=8"}
	sub, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.NoError(t, err)

	require.Equal(t, []string{"./am run --conf flink-conf.yaml --dynamic-file xres-dynamic.json --workers 4 -- python train.py 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
		rm.submitted.AM.Commands)
	asc, err := yarn.SubmissionProto(*rm.submitted)
	require.NoError(t, err)
	wire, err := proto.Marshal(asc)
	require.NoError(t, err)
	require.False(t, bytes.Contains(wire, []byte(sentinelSecret)), "the submission context carries the secret")
	staged, err := DecodeResources(rm.submitted.AM.Env[EnvLocalResources])
	require.NoError(t, err)
	for name, r := range staged {
		require.NotContains(t, name+r.URL.String(), sentinelSecret)
	}

	// Staged beside the others, with their visibility and exact size.
	remote := sub.StagingDir + "/" + DynamicFileName
	data, ok := fs.files[remote]
	require.True(t, ok, "dynamic file not staged")
	r := staged[DynamicFileName]
	require.Equal(t, yarn.File, r.Type)
	require.Equal(t, staged["flink-conf.yaml"].Visibility, r.Visibility)
	require.Equal(t, yarn.Application, r.Visibility)
	require.Equal(t, int64(len(data)), r.Size)
	require.Equal(t, remote, r.URL.File)
	got, err := conf.ParseDynamicFile(DynamicFileName, data)
	require.NoError(t, err)
	require.Equal(t, []string{"parallelism.default=8", "s3.secret-key=" + sentinelSecret}, got)

	// Written 0600 locally, and gone once staged.
	require.Equal(t, os.FileMode(0o600), fs.modes[DynamicFileName])
	require.NoFileExists(t, fs.local[DynamicFileName])
}

func TestSubmitWithoutOverridesStagesNoDynamicFile(t *testing.T) {
	rm, fs := gpuRM(), newMemFS()
	sub, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), testRequest(t))
	require.NoError(t, err)
	require.NotContains(t, fs.files, sub.StagingDir+"/"+DynamicFileName)
	require.NotContains(t, strings.Join(rm.submitted.AM.Commands, " "), "--dynamic-file")
}

func TestSubmitRefusesAUserFileNamedLikeTheDynamicFile(t *testing.T) {
	req := testRequest(t)
	_, _, _, data := localFiles(t)
	req.Files = append(req.Files, File{Local: data, Name: DynamicFileName, Type: yarn.File})
	req.Dynamic = []string{"a=b"}
	rm := gpuRM()
	_, err := Client{RM: rm, Stager: Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrBadFile)
	require.ErrorContains(t, err, "rename it with PATH#NAME")
	require.Nil(t, rm.submitted)
}
