//go:build integration

package integration

import (
	"context"
	"io"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
)

// runTinyAM submits the tiny Go AM (testdata/tinyam) to cluster c through cl, waits for
// it to end and checks what it reports: token file, AMRMToken over DIGEST-MD5, two
// yarn.io/gpu containers started with their NMTokens (one exits 0, one is stopped
// through stopContainers after getContainerStatuses saw it run), an oversized ask
// refused, FINISHED/SUCCEEDED. Shared by the suite's cluster test and the extra
// clusters' (secure_test.go).
func runTinyAM(t *testing.T, ctx context.Context, c *harness.Cluster, cl *yarn.Client) *hadoopyarn.ApplicationReportProto {
	t.Helper()
	bin := harness.BuildBinary(t, "./testdata/tinyam")

	app, err := raw(cl).GetNewApplication(ctx)
	require.NoError(t, err)
	id := app.GetApplicationId()
	appID := yarn.ApplicationID(id)
	c.KeepAppLogs(t, appID)

	// Stage the AM binary on HDFS; size and timestamp must match exactly.
	fs := c.HDFS(t)
	dir := path.Join("/user", c.User, "xres-rpc-test", appID)
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	remote := path.Join(dir, "tinyam")
	src, err := os.Open(bin)
	require.NoError(t, err)
	defer src.Close()
	w, err := fs.Create(remote)
	require.NoError(t, err)
	_, err = io.Copy(w, src)
	require.NoError(t, err)
	require.NoError(t, closeWriter(w)) // retries while the last block replicates
	fi, err := fs.Stat(remote)
	require.NoError(t, err)
	nnHost, nnPortS, err := net.SplitHostPort(c.NameNode)
	require.NoError(t, err)
	nnPort, err := strconv.Atoi(nnPortS)
	require.NoError(t, err)

	sched := rmAddrs(t, c, yarn.RMScheduler)
	asc := &hadoopyarn.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String("xres-tinyam"), ApplicationType: proto.String("XRES-TEST"),
		MaxAppAttempts: proto.Int32(1), Resource: yarn.NewResource(256, 1, nil),
		AmContainerSpec: &hadoopyarn.ContainerLaunchContextProto{
			LocalResources: []*hadoopyarn.StringLocalResourceMapProto{{
				Key: proto.String("tinyam"),
				Value: &hadoopyarn.LocalResourceProto{
					Resource: &hadoopyarn.URLProto{Scheme: proto.String("hdfs"), Host: proto.String(nnHost), Port: proto.Int32(int32(nnPort)), File: proto.String(remote)},
					Size:     proto.Int64(fi.Size()), Timestamp: proto.Int64(fi.ModTime().UnixMilli()),
					Type: hadoopyarn.LocalResourceTypeProto_FILE.Enum(), Visibility: hadoopyarn.LocalResourceVisibilityProto_APPLICATION.Enum(),
				},
			}},
			Environment: []*hadoopyarn.StringStringMapProto{{Key: proto.String("TINYAM_SCHEDULER"), Value: proto.String(strings.Join(sched, ","))}},
			Command:     []string{"./tinyam", "1><LOG_DIR>/stdout", "2><LOG_DIR>/stderr"},
		},
	}
	require.NoError(t, raw(cl).SubmitApplication(ctx, asc))
	r := waitReport(t, cl, id, hadoopyarn.YarnApplicationStateProto_FINISHED)
	require.Equal(t, hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED, r.GetFinalApplicationStatus(), "diagnostics: %s", r.GetDiagnostics())
	require.Contains(t, r.GetDiagnostics(), "tinyam: ok")
	// Report fields read with our field numbers hold sane values.
	require.Equal(t, "xres-tinyam", r.GetName())
	require.Equal(t, "XRES-TEST", r.GetApplicationType())
	require.Equal(t, appID, yarn.ApplicationID(r.GetApplicationId()))
	require.Equal(t, int32(1), r.GetCurrentApplicationAttemptId().GetAttemptId())
	require.Positive(t, r.GetStartTime())
	require.GreaterOrEqual(t, r.GetLaunchTime(), r.GetStartTime())
	require.GreaterOrEqual(t, r.GetFinishTime(), r.GetLaunchTime())
	require.InDelta(t, 1.0, r.GetProgress(), 0.001)
	// An ask above the maximum allocation is refused with the RM's own exception.
	require.Contains(t, r.GetDiagnostics(), "oversized ask: org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException")
	// The container stopped over ContainerManagementProtocol ends as killed
	// by the AM (-105), or with the signal's exit code.
	require.Regexp(t, `stopped container exit: (-105|143|137)\b`, r.GetDiagnostics())
	return r
}
