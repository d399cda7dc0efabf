package submit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
)

// fakeRM is a scripted ApplicationClientProtocol.
type fakeRM struct {
	max       *hadoopyarn.ResourceProto
	types     []string
	submitErr error
	submitted *hadoopyarn.ApplicationSubmissionContextProto
	states    []hadoopyarn.YarnApplicationStateProto
	reports   int
}

var testAppID = &hadoopyarn.ApplicationIdProto{Id: proto.Int32(7), ClusterTimestamp: proto.Int64(1700000000000)}

func (f *fakeRM) GetNewApplication(ctx context.Context) (*hadoopyarn.GetNewApplicationResponseProto, error) {
	return &hadoopyarn.GetNewApplicationResponseProto{ApplicationId: testAppID, MaximumCapability: f.max}, nil
}

func (f *fakeRM) GetResourceTypeInfo(ctx context.Context) ([]*hadoopyarn.ResourceTypeInfoProto, error) {
	var out []*hadoopyarn.ResourceTypeInfoProto
	for _, t := range f.types {
		out = append(out, &hadoopyarn.ResourceTypeInfoProto{Name: proto.String(t)})
	}
	return out, nil
}

func (f *fakeRM) SubmitApplication(ctx context.Context, asc *hadoopyarn.ApplicationSubmissionContextProto) error {
	f.submitted = asc
	return f.submitErr
}

func (f *fakeRM) GetApplicationReport(ctx context.Context, id *hadoopyarn.ApplicationIdProto) (*hadoopyarn.ApplicationReportProto, error) {
	s := f.states[min(f.reports, len(f.states)-1)]
	f.reports++
	rep := &hadoopyarn.ApplicationReportProto{ApplicationId: id, YarnApplicationState: s.Enum(), TrackingUrl: proto.String("http://rm:8088/proxy/app/")}
	if s == hadoopyarn.YarnApplicationStateProto_FINISHED {
		rep.FinalApplicationStatus = hadoopyarn.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()
	}
	return rep, nil
}

func gpuRM() *fakeRM {
	return &fakeRM{max: yarn.NewResource(8192, 4, map[string]int64{"yarn.io/gpu": 2}), types: []string{"memory-mb", "vcores", "yarn.io/gpu"}}
}

func testRequest(t *testing.T) Request {
	amBin, launcher, confFile, _ := localFiles(t)
	files, err := Files(amBin, launcher, confFile, nil)
	require.NoError(t, err)
	return Request{Name: "train", Queue: "gpu", User: "alice", Files: files, ConfName: "flink-conf.yaml",
		Worker: []string{"python", "train.py"}, Workers: 4,
		WorkerProfile: am.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}},
		Owners:        map[string]string{"yarn.io/gpu": "gpu"}}
}

func TestSubmit(t *testing.T) {
	rm, fs := gpuRM(), newMemFS()
	c := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}
	sub, err := c.Submit(context.Background(), testRequest(t))
	require.NoError(t, err)
	require.Equal(t, "application_1700000000000_0007", sub.AppID)
	require.Equal(t, "/user/alice/.xres/application_1700000000000_0007", sub.StagingDir)

	asc := rm.submitted
	require.Equal(t, "train", asc.GetApplicationName())
	require.Equal(t, "gpu", asc.GetQueue())
	require.Equal(t, ApplicationType, asc.GetApplicationType())
	require.Equal(t, int64(DefaultAMMemoryMB), asc.GetResource().GetMemory())
	require.Equal(t, []string{"./am run --conf flink-conf.yaml --workers 4 -- python train.py 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
		asc.GetAmContainerSpec().GetCommand())
	var names []string
	for _, lr := range asc.GetAmContainerSpec().GetLocalResources() {
		names = append(names, lr.GetKey())
		require.Equal(t, "nn", lr.GetValue().GetResource().GetHost())
	}
	require.Equal(t, []string{"am", "container-launcher", "flink-conf.yaml"}, names)
	require.Len(t, fs.files, 3)
}

func TestSubmitFailures(t *testing.T) {
	t.Run("profile refused before staging", func(t *testing.T) {
		rm, fs := gpuRM(), newMemFS()
		rm.types = []string{"memory-mb", "vcores"}
		_, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), testRequest(t))
		require.ErrorIs(t, err, am.ErrProfileUnsatisfiable)
		require.ErrorContains(t, err, "yarn.io/gpu is not a resource type of this cluster")
		require.Empty(t, fs.dirs)
		require.Nil(t, rm.submitted)
	})
	t.Run("submission refused: staging removed", func(t *testing.T) {
		rm, fs := gpuRM(), newMemFS()
		rm.submitErr = errors.New("queue gpu does not exist")
		_, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), testRequest(t))
		require.ErrorContains(t, err, "submit application_1700000000000_0007: queue gpu does not exist")
		require.Equal(t, []string{"/user/alice/.xres/application_1700000000000_0007"}, fs.removed)
		require.Empty(t, fs.files)
	})
	t.Run("no worker", func(t *testing.T) {
		req := testRequest(t)
		req.Worker = nil
		_, err := Client{RM: gpuRM()}.Submit(context.Background(), req)
		require.ErrorContains(t, err, "no worker command")
	})
}

func TestWait(t *testing.T) {
	rm := gpuRM()
	rm.states = []hadoopyarn.YarnApplicationStateProto{
		hadoopyarn.YarnApplicationStateProto_ACCEPTED, hadoopyarn.YarnApplicationStateProto_ACCEPTED,
		hadoopyarn.YarnApplicationStateProto_RUNNING, hadoopyarn.YarnApplicationStateProto_FINISHED,
	}
	var seen []string
	c := Client{RM: rm, After: func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}}
	rep, err := c.Wait(context.Background(), testAppID, func(r yarn.ApplicationReport) {
		seen = append(seen, r.State)
	})
	require.NoError(t, err)
	require.Equal(t, []string{"ACCEPTED", "ACCEPTED", "RUNNING", "FINISHED"}, seen, "every report")
	require.Equal(t, "SUCCEEDED", rep.FinalStatus)
	require.True(t, rep.Succeeded())
	require.Equal(t, 4, rm.reports)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rm.reports = 0
	_, err = Client{RM: rm, After: func(time.Duration) <-chan time.Time { return make(chan time.Time) }}.Wait(ctx, testAppID, nil)
	require.ErrorIs(t, err, context.Canceled)
}
