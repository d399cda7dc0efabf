package submit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/internal/logutil"
)

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
	RMAddresses        []string // the RM's client-protocol address(es), likewise
	// HadoopConf, when set, is the client's resolved Hadoop configuration:
	// shipped to the AM alone (HadoopConfName, MarshalHadoopConf), which
	// takes the cluster's addresses, web proxy and HTTP policy from it
	// where its container has no HADOOP_CONF_DIR of its own.
	HadoopConf *conf.HadoopConfig
	Tokens     []byte // HDTS credentials for the AM (the report secret, delegation tokens on a secure cluster)
	// Keytab, when set, is shipped to the AM alone (KeytabName, mode 0600,
	// deleted with the staging folder), with Krb5Conf when set
	// (Krb5ConfName): the AM logs in with it to obtain new delegation
	// tokens. Local paths.
	Keytab, Krb5Conf string
	AMMemoryMB       int64 // DefaultAMMemoryMB when 0
	AMVcores         int32 // DefaultAMVcores when 0
	MaxAttempts      int32 // 0: the cluster's yarn.resourcemanager.am.max-attempts
	// WorkerProfile and Owners, when the profile is set, are checked against
	// the cluster before anything is staged (amplan.CheckProfile).
	WorkerProfile yarn.Resource
	Owners        map[string]string
	// Groups, when set, replace WorkerProfile and Owners: each group's
	// Plan.Profile and Owners are checked, the error naming the group.
	Groups []amplan.Group
	// NodeLabel, Tags and Priority: see Submission.
	NodeLabel string
	Tags      []string
	Priority  *int32
}

// Submitted is an application the RM accepted.
type Submitted struct {
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
	// RMDownWait is how long Wait keeps asking while no ResourceManager
	// answers (an RM restart or fail-over), as Hadoop's clients do for
	// yarn.resourcemanager.connect.max-wait.ms (default DefaultRMDownWait).
	RMDownWait time.Duration
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
	reserved := map[string]string{}
	if len(req.Dynamic) > 0 {
		reserved[DynamicFileName] = "the -D overrides' file"
	}
	if req.Keytab != "" {
		reserved[KeytabName] = "the keytab"
		if req.Krb5Conf != "" {
			reserved[Krb5ConfName] = "the shipped krb5.conf"
		}
	}
	if req.HadoopConf != nil {
		reserved[HadoopConfName] = "the client's Hadoop configuration"
	}
	for _, f := range req.Files {
		if what, ok := reserved[f.Name]; ok {
			return Submitted{}, fmt.Errorf("submit application: %w: %s would be %q in the container, the name of %s; rename it with PATH#NAME", ErrBadFile, f.Local, f.Name, what)
		}
	}
	newApp, err := c.RM.NewApplication(ctx)
	if err != nil {
		return Submitted{}, fmt.Errorf("submit application: get new application: %w", err)
	}
	sub := Submitted{AppID: newApp.ID}
	groups := req.Groups
	if len(groups) == 0 && req.WorkerProfile.MemoryMB > 0 {
		groups = []amplan.Group{{Plan: amplan.Plan{Profile: req.WorkerProfile}, Owners: req.Owners}}
	}
	if len(groups) > 0 {
		types, err := c.RM.ResourceTypes(ctx)
		if err != nil {
			return sub, fmt.Errorf("submit %s: get resource types: %w", sub.AppID, err)
		}
		limits := amplan.ClusterLimits{Types: types, Max: newApp.MaxCapability}
		for _, g := range groups {
			if err := amplan.CheckProfile(g.Plan.Profile, limits, g.Owners); err != nil {
				if g.Name != "" {
					return sub, fmt.Errorf("submit %s: worker group %s: %w", sub.AppID, g.Name, err)
				}
				return sub, fmt.Errorf("submit %s: %w", sub.AppID, err)
			}
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
		files = append(slices.Clone(files), File{Local: local, Name: DynamicFileName, Type: yarn.File})
		dynamicFile = DynamicFileName
	}
	keytab, krb5Conf := "", ""
	if req.Keytab != "" {
		files = append(slices.Clone(files), File{Local: req.Keytab, Name: KeytabName, Type: yarn.File, Mode: 0o600})
		keytab = KeytabName
		if req.Krb5Conf != "" {
			files = append(files, File{Local: req.Krb5Conf, Name: Krb5ConfName, Type: yarn.File})
			krb5Conf = Krb5ConfName
		}
	}
	hadoopConf := ""
	if req.HadoopConf != nil {
		local, remove, err := writeHadoopConf(req.HadoopConf)
		if err != nil {
			return sub, fmt.Errorf("submit %s: %w", sub.AppID, err)
		}
		defer remove()
		files = append(slices.Clone(files), File{Local: local, Name: HadoopConfName, Type: yarn.File})
		hadoopConf = HadoopConfName
	}
	staged, err := c.Stager.Stage(ctx, sub.StagingDir, files)
	if err != nil {
		return sub, fmt.Errorf("submit %s: %w", sub.AppID, err)
	}
	lc, err := AMLaunchContext(AMSpec{Staged: staged, ConfName: req.ConfName, DynamicFile: dynamicFile,
		Workers: req.Workers, Worker: req.Worker, Env: req.MasterEnv, Tokens: req.Tokens, Vcores: cmp.Or(req.AMVcores, DefaultAMVcores),
		SchedulerAddresses: req.SchedulerAddresses, DefaultFS: req.DefaultFS, RMAddresses: req.RMAddresses, Keytab: keytab, Krb5Conf: krb5Conf,
		HadoopConf: hadoopConf})
	if err != nil {
		return sub, c.failed(ctx, sub, err)
	}
	if err := c.RM.Submit(ctx, NewSubmission(sub.AppID, req, lc)); err != nil {
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

// NewSubmission is the submission of an xres application: req's name and
// queue (xres and default when empty), the AM container's size and
// attempts, and its launch context lc.
func NewSubmission(appID string, req Request, lc yarn.LaunchContext) yarn.Submission {
	sub := yarn.Submission{AppID: appID, Name: req.Name, Queue: req.Queue, Type: ApplicationType,
		AMResource:  yarn.Resource{MemoryMB: req.AMMemoryMB, VCores: int64(req.AMVcores)},
		MaxAttempts: req.MaxAttempts, AM: lc, NodeLabel: req.NodeLabel, Tags: req.Tags, Priority: req.Priority}
	if sub.Name == "" {
		sub.Name = "xres"
	}
	if sub.Queue == "" {
		sub.Queue = "default"
	}
	if sub.AMResource.MemoryMB <= 0 {
		sub.AMResource.MemoryMB = DefaultAMMemoryMB
	}
	if sub.AMResource.VCores <= 0 {
		sub.AMResource.VCores = DefaultAMVcores
	}
	return sub
}

// DefaultRMDownWait is Hadoop's yarn.resourcemanager.connect.max-wait.ms
// default (15 min).
const DefaultRMDownWait = yarn.DefaultRMConnectMaxWait

// Wait polls the application's report until it ends, calling onReport
// (when not nil) with every report, the final one included, and returns
// the final report.
func (c Client) Wait(ctx context.Context, appID string, onReport func(yarn.ApplicationReport)) (yarn.ApplicationReport, error) {
	interval := c.PollInterval
	if interval <= 0 {
		interval = time.Second
	}
	after := c.After
	if after == nil {
		after = time.After
	}
	downWait := c.RMDownWait
	if downWait <= 0 {
		downWait = DefaultRMDownWait
	}
	var downSince time.Time
	for {
		rep, err := c.RM.ApplicationReport(ctx, appID)
		if errors.Is(err, yarn.ErrNoActiveRM) && ctx.Err() == nil {
			// The application runs on while its RM restarts.
			if downSince.IsZero() {
				downSince = time.Now()
			}
			if time.Since(downSince) < downWait {
				select {
				case <-ctx.Done():
				case <-after(interval):
				}
				continue
			}
		}
		if err != nil {
			return yarn.ApplicationReport{}, fmt.Errorf("follow %s: %w", appID, err)
		}
		downSince = time.Time{}
		if onReport != nil {
			onReport(rep)
		}
		if rep.Ended() {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return yarn.ApplicationReport{}, fmt.Errorf("follow %s: %w", appID, ctx.Err())
		case <-after(interval):
		}
	}
}
