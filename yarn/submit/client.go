package submit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
	"github.com/xres/xres/yarn/internal/logutil"
)

// RM is what submission needs from ApplicationClientProtocol (*yarn.Client).
type RM interface {
	GetNewApplication(ctx context.Context) (*hadoopyarn.GetNewApplicationResponseProto, error)
	GetResourceTypeInfo(ctx context.Context) ([]*hadoopyarn.ResourceTypeInfoProto, error)
	SubmitApplication(ctx context.Context, asc *hadoopyarn.ApplicationSubmissionContextProto) error
	GetApplicationReport(ctx context.Context, id *hadoopyarn.ApplicationIdProto) (*hadoopyarn.ApplicationReportProto, error)
}

var _ RM = (*yarn.Client)(nil)

// ApplicationType is the YARN application type of xres applications.
const ApplicationType = "XRES"

// Defaults of the AM container (a small Go process).
const (
	DefaultAMMemoryMB = 256
	DefaultAMVcores   = 1
)

// Request is one application to submit.
type Request struct {
	Name     string
	Queue    string
	User     string // staging folder owner (/user/<User>/.xres)
	Files    []File // see Files
	ConfName string // link name of the Flink configuration; "" for none
	// Dynamic are the -D overrides, key=value. They are staged as the
	// dynamic file DynamicFileName (mode 0600 locally, in the 0700
	// staging folder on HDFS) and only its name is on command lines.
	Dynamic   []string
	Workers   int
	Worker    []string
	MasterEnv map[string]string // containerized.master.env.*
	// SchedulerAddresses and DefaultFS reach the AM (AMSpec) for a
	// container without HADOOP_CONF_DIR.
	SchedulerAddresses []string
	DefaultFS          string
	Tokens             []byte // HDTS credentials for the AM; nil when insecure
	AMMemoryMB         int64  // DefaultAMMemoryMB when 0
	AMVcores           int32  // DefaultAMVcores when 0
	MaxAttempts        int32  // 0: the cluster's yarn.resourcemanager.am.max-attempts
	// WorkerProfile and Owners, when the profile is set, are checked against
	// the cluster before anything is staged (am.CheckProfile).
	WorkerProfile am.Resource
	Owners        map[string]string
}

// Submitted is an application the RM accepted.
type Submitted struct {
	ID         *hadoopyarn.ApplicationIdProto
	AppID      string
	StagingDir string
}

// Client submits and follows applications.
type Client struct {
	RM     RM
	Stager Stager
	Log    logrus.FieldLogger
	// PollInterval between application reports in Wait (default 1 s).
	PollInterval time.Duration
	// After waits; nil means time.After (tests pass a ready channel).
	After func(time.Duration) <-chan time.Time
}

func (c Client) log() logrus.FieldLogger { return logutil.OrDiscard(c.Log) }

// Submit reserves an application id, checks the worker profile against the
// cluster's resource types and maximum allocation, stages the files, and
// submits the AM. Staging is removed again when submission fails.
func (c Client) Submit(ctx context.Context, req Request) (Submitted, error) {
	if len(req.Worker) == 0 {
		return Submitted{}, errors.New("submit application: no worker command")
	}
	if len(req.Dynamic) > 0 {
		for _, f := range req.Files {
			if f.Name == DynamicFileName {
				return Submitted{}, fmt.Errorf("submit application: %w: %s would be %q in the container, the name of the -D overrides' file; rename it with PATH#NAME", ErrBadFile, f.Local, f.Name)
			}
		}
	}
	newApp, err := c.RM.GetNewApplication(ctx)
	if err != nil {
		return Submitted{}, fmt.Errorf("submit application: get new application: %w", err)
	}
	id := newApp.GetApplicationId()
	sub := Submitted{ID: id, AppID: yarn.ApplicationID(id)}
	if req.WorkerProfile.MemoryMB > 0 {
		types, err := c.RM.GetResourceTypeInfo(ctx)
		if err != nil {
			return sub, fmt.Errorf("submit %s: get resource types: %w", sub.AppID, err)
		}
		limits := am.ClusterLimits{Types: yarn.ResourceTypesFromProto(types), Max: yarn.ResourceFromProto(newApp.GetMaximumCapability())}
		if err := am.CheckProfile(req.WorkerProfile, limits, req.Owners); err != nil {
			return sub, fmt.Errorf("submit %s: %w", sub.AppID, err)
		}
	}
	sub.StagingDir = StagingDir(req.User, sub.AppID)
	files, dynamicFile := req.Files, ""
	if len(req.Dynamic) > 0 {
		local, remove, err := writeDynamicFile(req.Dynamic)
		if err != nil {
			return sub, fmt.Errorf("submit %s: %w", sub.AppID, err)
		}
		defer remove()
		files = append(slices.Clone(files), File{Local: local, Name: DynamicFileName, Type: am.File})
		dynamicFile = DynamicFileName
	}
	staged, err := c.Stager.Stage(ctx, sub.StagingDir, files)
	if err != nil {
		return sub, fmt.Errorf("submit %s: %w", sub.AppID, err)
	}
	lc, err := AMLaunchContext(AMSpec{Staged: staged, ConfName: req.ConfName, DynamicFile: dynamicFile,
		Workers: req.Workers, Worker: req.Worker, Env: req.MasterEnv, Tokens: req.Tokens,
		SchedulerAddresses: req.SchedulerAddresses, DefaultFS: req.DefaultFS})
	if err != nil {
		return sub, c.failed(ctx, sub, err)
	}
	asc := SubmissionContext(id, req, lc)
	if err := c.RM.SubmitApplication(ctx, asc); err != nil {
		return sub, c.failed(ctx, sub, fmt.Errorf("submit %s: %w", sub.AppID, err))
	}
	c.log().WithFields(logrus.Fields{"app": sub.AppID, "staging": sub.StagingDir}).Debug("application submitted")
	return sub, nil
}

// writeDynamicFile writes the -D overrides to a fresh local file, mode
// 0600, for staging; remove deletes it again.
func writeDynamicFile(dynamic []string) (path string, remove func(), err error) {
	f, err := os.CreateTemp("", "xres-dynamic-*.json")
	if err != nil {
		return "", nil, fmt.Errorf("write the -D overrides' file: %w", err)
	}
	path = f.Name()
	remove = func() { _ = os.Remove(path) }
	if err := f.Close(); err != nil {
		remove()
		return "", nil, fmt.Errorf("write the -D overrides' file: %w", err)
	}
	if err := conf.WriteDynamicFile(path, dynamic); err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}

func (c Client) failed(ctx context.Context, sub Submitted, err error) error {
	if cerr := c.Stager.Cleanup(context.WithoutCancel(ctx), sub.StagingDir); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// SubmissionContext builds the ApplicationSubmissionContextProto of an
// xres application.
func SubmissionContext(id *hadoopyarn.ApplicationIdProto, req Request, lc am.LaunchContext) *hadoopyarn.ApplicationSubmissionContextProto {
	name := req.Name
	if name == "" {
		name = "xres"
	}
	queue := req.Queue
	if queue == "" {
		queue = "default"
	}
	mem, vcores := req.AMMemoryMB, req.AMVcores
	if mem <= 0 {
		mem = DefaultAMMemoryMB
	}
	if vcores <= 0 {
		vcores = DefaultAMVcores
	}
	asc := &hadoopyarn.ApplicationSubmissionContextProto{
		ApplicationId:   id,
		ApplicationName: proto.String(name),
		Queue:           proto.String(queue),
		AmContainerSpec: am.LaunchProto(lc),
		Resource:        yarn.NewResource(mem, vcores, nil),
		ApplicationType: proto.String(ApplicationType),
	}
	if req.MaxAttempts > 0 {
		asc.MaxAppAttempts = proto.Int32(req.MaxAttempts)
	}
	return asc
}

// Ended reports whether an application state is final.
func Ended(s hadoopyarn.YarnApplicationStateProto) bool {
	switch s {
	case hadoopyarn.YarnApplicationStateProto_FINISHED, hadoopyarn.YarnApplicationStateProto_FAILED,
		hadoopyarn.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

// Wait polls the application's report until it ends, calling onReport
// (when not nil) with every report, the final one included, and returns
// the final report.
func (c Client) Wait(ctx context.Context, id *hadoopyarn.ApplicationIdProto, onReport func(yarn.ApplicationReport)) (yarn.ApplicationReport, error) {
	interval := c.PollInterval
	if interval <= 0 {
		interval = time.Second
	}
	after := c.After
	if after == nil {
		after = time.After
	}
	for {
		p, err := c.RM.GetApplicationReport(ctx, id)
		if err != nil {
			return yarn.ApplicationReport{}, fmt.Errorf("follow %s: %w", yarn.ApplicationID(id), err)
		}
		rep := yarn.ApplicationReportFromProto(p)
		if onReport != nil {
			onReport(rep)
		}
		if rep.Ended() {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return yarn.ApplicationReport{}, fmt.Errorf("follow %s: %w", yarn.ApplicationID(id), ctx.Err())
		case <-after(interval):
		}
	}
}
