package submit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/yarn"
)

// chmodFS records the permissions set on staged files.
type chmodFS struct {
	*memFS
	modes map[string]os.FileMode
}

func (c *chmodFS) Chmod(ctx context.Context, name string, perm os.FileMode) error {
	c.modes[name] = perm
	return nil
}

const keytabSentinel = "xres-keytab-sentinel"

// With a keytab, submission ships it (and the krb5.conf) to the AM alone:
// in the AM's local resources and named by its environment, staged 0600
// in the staging folder (removed with it), and absent from what the AM
// hands the workers; the keytab's content is nowhere in the submission.
func TestSubmitShipsKeytabToTheAMAlone(t *testing.T) {
	dir := t.TempDir()
	keytab, krb5 := filepath.Join(dir, "alice.keytab"), filepath.Join(dir, "krb5.conf")
	require.NoError(t, os.WriteFile(keytab, []byte(keytabSentinel), 0o600))
	require.NoError(t, os.WriteFile(krb5, []byte("[libdefaults]\n"), 0o644))
	rm := gpuRM()
	fs := &chmodFS{memFS: newMemFS(), modes: map[string]os.FileMode{}}
	req := testRequest(t)
	req.Keytab, req.Krb5Conf = keytab, krb5
	sub, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.NoError(t, err)

	am := rm.submitted.AM
	remote := sub.StagingDir + "/" + KeytabName
	require.Equal(t, []byte(keytabSentinel), fs.files[remote])
	require.Equal(t, os.FileMode(0o600), fs.modes[remote])
	require.Contains(t, am.LocalResources, KeytabName)
	require.Equal(t, yarn.Application, am.LocalResources[KeytabName].Visibility)
	require.Equal(t, remote, am.LocalResources[KeytabName].URL.File)
	require.Contains(t, am.LocalResources, Krb5ConfName)
	require.Equal(t, KeytabName, am.Env[EnvKeytab])
	require.Equal(t, Krb5ConfName, am.Env[EnvKrb5Conf])

	ae, err := ReadAMEnv(func(k string) string { return am.Env[k] })
	require.NoError(t, err)
	require.Equal(t, KeytabName, ae.Keytab)
	require.Equal(t, Krb5ConfName, ae.Krb5Conf)
	require.NotContains(t, ae.Resources, KeytabName, "the workers' files")
	require.NotContains(t, ae.Resources, Krb5ConfName, "the workers' files")
	require.Contains(t, ae.Resources, "container-launcher")

	asc, err := yarn.SubmissionProto(*rm.submitted)
	require.NoError(t, err)
	wire, err := proto.Marshal(asc)
	require.NoError(t, err)
	require.False(t, bytes.Contains(wire, []byte(keytabSentinel)), "the submission carries the keytab")

	// Without one, nothing of it.
	rm = gpuRM()
	_, err = Client{RM: rm, Stager: Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), testRequest(t))
	require.NoError(t, err)
	require.NotContains(t, rm.submitted.AM.LocalResources, KeytabName)
	require.NotContains(t, rm.submitted.AM.Env, EnvKeytab)

	// A user file may not take its name; an FS that cannot chmod refuses it.
	req = testRequest(t)
	req.Keytab = keytab
	req.Files = append(req.Files, File{Local: krb5, Name: KeytabName})
	_, err = Client{RM: gpuRM(), Stager: Stager{FS: &chmodFS{memFS: newMemFS(), modes: map[string]os.FileMode{}}, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrBadFile)
	require.ErrorContains(t, err, "the name of the keytab")
	req = testRequest(t)
	req.Keytab = keytab
	_, err = Client{RM: gpuRM(), Stager: Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.ErrorContains(t, err, "cannot set its permission")
}
