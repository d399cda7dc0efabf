package submit

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
)

// fakeRM is a scripted ResourceManager.
type fakeRM struct {
	max       yarn.Resource
	types     []string
	submitErr error
	submitted *yarn.Submission
	states    []string
	reports   int
}

const testAppID = "application_1700000000000_0007"

func (f *fakeRM) NewApplication(ctx context.Context) (yarn.NewApplication, error) {
	return yarn.NewApplication{ID: testAppID, MaxCapability: f.max}, nil
}

func (f *fakeRM) ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error) {
	var out []yarn.ResourceType
	for _, t := range f.types {
		out = append(out, yarn.ResourceType{Name: t})
	}
	return out, nil
}

func (f *fakeRM) Submit(ctx context.Context, sub yarn.Submission) error {
	f.submitted = &sub
	return f.submitErr
}

func (f *fakeRM) ApplicationReport(ctx context.Context, id string) (yarn.ApplicationReport, error) {
	s := f.states[min(f.reports, len(f.states)-1)]
	f.reports++
	rep := yarn.ApplicationReport{ID: id, State: s, FinalStatus: "UNDEFINED", TrackingURL: "http://rm:8088/proxy/app/"}
	if s == "FINISHED" {
		rep.FinalStatus = "SUCCEEDED"
	}
	return rep, nil
}

func gpuRM() *fakeRM {
	return &fakeRM{max: yarn.Resource{MemoryMB: 8192, VCores: 4, Extra: map[string]int64{"yarn.io/gpu": 2}}, types: []string{"memory-mb", "vcores", "yarn.io/gpu"}}
}

func testRequest(t *testing.T) Request {
	amBin, launcher, confFile, _ := localFiles(t)
	files, err := Files(amBin, launcher, confFile, nil)
	require.NoError(t, err)
	return Request{Name: "train", Queue: "gpu", User: "alice", Files: files, ConfName: "flink-conf.yaml",
		Worker: []string{"python", "train.py"}, Workers: 4,
		WorkerProfile: yarn.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 1}},
		Owners:        map[string]string{"yarn.io/gpu": "gpu"}}
}

func TestSubmit(t *testing.T) {
	rm, fs := gpuRM(), newMemFS()
	c := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}
	sub, err := c.Submit(context.Background(), testRequest(t))
	require.NoError(t, err)
	require.Equal(t, "application_1700000000000_0007", sub.AppID)
	require.Equal(t, "/user/alice/.xres/application_1700000000000_0007", sub.StagingDir)

	got := rm.submitted
	require.Equal(t, "train", got.Name)
	require.Equal(t, "gpu", got.Queue)
	require.Equal(t, ApplicationType, got.Type)
	require.Equal(t, yarn.Resource{MemoryMB: DefaultAMMemoryMB, VCores: DefaultAMVcores}, got.AMResource)
	require.Equal(t, "1", got.AM.Env["GOMAXPROCS"], "the AM runs with one P per vcore of its container")
	require.Equal(t, []string{"./am run --conf flink-conf.yaml --workers 4 -- python train.py 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"},
		got.AM.Commands)
	require.ElementsMatch(t, []string{"am", "container-launcher", "flink-conf.yaml"}, slices.Collect(maps.Keys(got.AM.LocalResources)))
	for _, lr := range got.AM.LocalResources {
		require.Equal(t, "nn", lr.URL.Host)
	}

	// Its RPC form: the fields YARN reads.
	asc, err := yarn.SubmissionProto(*got)
	require.NoError(t, err)
	require.Equal(t, "application_1700000000000_0007", yarn.ApplicationID(asc.GetApplicationId()))
	require.Equal(t, "train", asc.GetApplicationName())
	require.Equal(t, "gpu", asc.GetQueue())
	require.Equal(t, ApplicationType, asc.GetApplicationType())
	require.Equal(t, int64(DefaultAMMemoryMB), asc.GetResource().GetMemory())
	require.Equal(t, got.AM.Commands, asc.GetAmContainerSpec().GetCommand())
	require.Nil(t, asc.MaxAppAttempts, "0 attempts: the cluster's default")
	require.True(t, asc.GetKeepContainersAcrossApplicationAttempts(), "a new AM attempt keeps the workers")
	require.Len(t, fs.files, 3)
}

func TestSubmitFailures(t *testing.T) {
	t.Run("profile refused before staging", func(t *testing.T) {
		rm, fs := gpuRM(), newMemFS()
		rm.types = []string{"memory-mb", "vcores"}
		_, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), testRequest(t))
		require.ErrorIs(t, err, amplan.ErrProfileUnsatisfiable)
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
	rm.states = []string{"ACCEPTED", "ACCEPTED", "RUNNING", "FINISHED"}
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

// downRM answers ErrNoActiveRM for its first down reports (an RM restarting).
type downRM struct {
	*fakeRM
	down int
}

func (d *downRM) ApplicationReport(ctx context.Context, id string) (yarn.ApplicationReport, error) {
	if d.down > 0 {
		d.down--
		return yarn.ApplicationReport{}, yarn.ErrNoActiveRM
	}
	return d.fakeRM.ApplicationReport(ctx, id)
}

// Wait follows an application across an RM restart (no RM answers for a
// while) within RMDownWait, and gives up with ErrNoActiveRM past it.
func TestWaitAcrossRMRestart(t *testing.T) {
	ready := func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}
	for _, tc := range []struct {
		name string
		wait time.Duration
		ok   bool
	}{{"within the bound", time.Hour, true}, {"past the bound", time.Nanosecond, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rm := gpuRM()
			rm.states = []string{"RUNNING", "FINISHED"}
			rep, err := Client{RM: &downRM{fakeRM: rm, down: 3}, After: ready, RMDownWait: tc.wait}.Wait(context.Background(), testAppID, nil)
			if !tc.ok {
				require.ErrorIs(t, err, yarn.ErrNoActiveRM)
				return
			}
			require.NoError(t, err)
			require.True(t, rep.Succeeded())
		})
	}
}
