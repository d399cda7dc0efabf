package submit

// This file is the whole client→AM contract: what am submit puts into the
// AM container (command line, files, environment) and how am run reads the
// environment back. Both sides use it; nothing else names these variables.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
)

// Link names of the files every xres application ships.
const (
	AMBinary       = amplan.AMName
	LauncherBinary = amplan.LauncherName
	NVMLHelper     = amplan.NVMLHelperName
	NMRESTHelper   = amplan.NMRESTHelperName
	// DynamicFileName is the staged dynamic file's link name in every
	// container (am run --dynamic-file and container-launcher
	// --dynamic-file name it).
	DynamicFileName = "xres-dynamic.json"
	// KeytabName and Krb5ConfName are the link names of the keytab and
	// krb5.conf shipped to the AM alone (Flink's
	// yarn.security.kerberos.localized-keytab-path default, krb5.keytab).
	KeytabName   = "krb5.keytab"
	Krb5ConfName = "krb5.conf"
)

// ConfName is the link name the Flink configuration at confPath is staged
// under in every container: its base name, so that its format is kept
// (flink-conf.yaml or config.yaml); "" when there is none.
func ConfName(confPath string) string {
	if confPath == "" {
		return ""
	}
	return filepath.Base(confPath)
}

// Environment of the AM container, set by the client.
const (
	// EnvLocalResources carries the staged files to the AM, which gives
	// them to every worker: base64 of the JSON map link name → resource
	// (base64 because the NodeManager writes values inside double quotes).
	EnvLocalResources = "XRES_LOCAL_RESOURCES"
	// EnvStagingDir names the staging folder, for the AM's clean-up.
	EnvStagingDir = "XRES_STAGING_DIR"
	// EnvSchedulerAddresses is the client's view of the RM scheduler
	// address(es), comma-separated; the AM uses it when its container has
	// no Hadoop configuration (HADOOP_CONF_DIR) and none was shipped
	// (EnvHadoopConf).
	EnvSchedulerAddresses = "XRES_RM_SCHEDULER_ADDRESSES"
	// EnvRMAddresses is the client's view of the RM's client-protocol
	// address(es) (yarn.resourcemanager.address), comma-separated, for the
	// same AM: it lists the cluster's nodes there.
	EnvRMAddresses = "XRES_RM_ADDRESSES"
	// EnvDefaultFS is the client's fs.defaultFS, for the same fallback.
	EnvDefaultFS = "XRES_DEFAULT_FS"
	// EnvKeytab names the keytab shipped to the AM (KeytabName), which it
	// logs in with (as security.kerberos.login.principal) to obtain new
	// delegation tokens; unset: none was shipped.
	EnvKeytab = "XRES_KEYTAB"
	// EnvKrb5Conf names the krb5.conf shipped with it (Krb5ConfName);
	// unset: the AM's $KRB5_CONFIG, else /etc/krb5.conf.
	EnvKrb5Conf = "XRES_KRB5_CONF"
	// EnvHadoopConf names the client's resolved Hadoop configuration
	// shipped to the AM (HadoopConfName); unset: none was shipped (the AM
	// then has only its container's HADOOP_CONF_DIR, else the addresses
	// above).
	EnvHadoopConf = "XRES_HADOOP_CONF"
)

// EncodeResources renders resources for EnvLocalResources.
func EncodeResources(res map[string]yarn.LocalResource) (string, error) {
	data, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("encode local resources: %w", err)
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

// DecodeResources reads EnvLocalResources back.
func DecodeResources(s string) (map[string]yarn.LocalResource, error) {
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", EnvLocalResources, err)
	}
	var res map[string]yarn.LocalResource
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("decode %s: %w", EnvLocalResources, err)
	}
	return res, nil
}

// AMSpec is what the ApplicationMaster container is started with.
type AMSpec struct {
	Staged   Staged
	ConfName string // link name of the Flink configuration; "" for none
	// DynamicFile is the link name of the staged dynamic file holding the
	// -D overrides (DynamicFileName); "" for none. The overrides themselves
	// never go on a command line: ps, the NodeManager's launch script (kept
	// in the container's log folder) and the RM would show them.
	DynamicFile string
	Workers     int // --workers; 0: from the configuration
	// Vcores is the AM container's vcores: the AM's GOMAXPROCS unless Env
	// sets one. The AM waits on the network; one P per vcore keeps it
	// within its share of the host (as Go does by itself where YARN
	// enforces CPU limits with cgroups), and its RPC client spends a third
	// less CPU per call than with a P per host CPU (integration's
	// BenchmarkRPCGetClusterMetrics, go vs go-ncpu). 0: not set.
	Vcores int32
	Worker []string          // the worker command
	Env    map[string]string // containerized.master.env.*
	Tokens []byte            // HDTS credentials for the AM: the report secret, and delegation tokens on a secure cluster
	// SchedulerAddresses and DefaultFS are the client's view of the RM
	// scheduler address(es) and fs.defaultFS, for an AM container without
	// HADOOP_CONF_DIR; empty: not passed.
	SchedulerAddresses []string
	DefaultFS          string
	// RMAddresses is the client's view of the RM's client-protocol
	// address(es), for the same fallback; empty: not passed.
	RMAddresses []string
	// Keytab and Krb5Conf are the link names of staged files for the AM
	// alone (KeytabName, Krb5ConfName): in its local resources but never in
	// EnvLocalResources, so no worker gets them; "": none.
	Keytab, Krb5Conf string
	// HadoopConf is the link name of the client's resolved Hadoop
	// configuration (HadoopConfName), for the AM alone like Keytab; "": none.
	HadoopConf string
}

// AMEnv is what the AM reads back from its container's environment.
type AMEnv struct {
	Resources          map[string]yarn.LocalResource // the staged files; nil: none passed
	StagingDir         string                        // "": none (nothing to clean up)
	SchedulerAddresses []string                      // nil: not passed
	RMAddresses        []string                      // nil: not passed
	DefaultFS          string
	Keytab, Krb5Conf   string // link names in the AM's folder (AMSpec); "": not shipped
	HadoopConf         string // link name of the client's Hadoop configuration (AMSpec); "": not shipped
}

// ReadAMEnv reads what AMLaunchContext put into the AM container's
// environment.
func ReadAMEnv(getenv func(string) string) (AMEnv, error) {
	e := AMEnv{StagingDir: getenv(EnvStagingDir), DefaultFS: getenv(EnvDefaultFS),
		Keytab: getenv(EnvKeytab), Krb5Conf: getenv(EnvKrb5Conf), HadoopConf: getenv(EnvHadoopConf)}
	if v := getenv(EnvSchedulerAddresses); v != "" {
		e.SchedulerAddresses = strings.Split(v, ",")
	}
	if v := getenv(EnvRMAddresses); v != "" {
		e.RMAddresses = strings.Split(v, ",")
	}
	if v := getenv(EnvLocalResources); v != "" {
		res, err := DecodeResources(v)
		if err != nil {
			return AMEnv{}, err
		}
		e.Resources = res
	}
	return e, nil
}

// AMLaunchContext builds the AM container's launch context:
//
//	./am run [--conf NAME] [--dynamic-file NAME] [--workers N] -- <worker command> 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr
//
// with the staged files as local resources and the environment
// (containerized.master.env.*, GOMAXPROCS = Vcores unless set there, then
// EnvLocalResources, EnvStagingDir,
// EnvSchedulerAddresses, EnvRMAddresses, EnvDefaultFS, EnvKeytab, EnvKrb5Conf and EnvHadoopConf, which
// ReadAMEnv reads back).
func AMLaunchContext(spec AMSpec) (yarn.LaunchContext, error) {
	if len(spec.Worker) == 0 {
		return yarn.LaunchContext{}, fmt.Errorf("build AM launch context: no worker command")
	}
	argv := []string{"./" + AMBinary, "run"}
	if spec.ConfName != "" {
		argv = append(argv, "--conf", spec.ConfName)
	}
	if spec.DynamicFile != "" {
		argv = append(argv, "--dynamic-file", spec.DynamicFile)
	}
	if spec.Workers > 0 {
		argv = append(argv, "--workers", strconv.Itoa(spec.Workers))
	}
	argv = append(append(argv, "--"), spec.Worker...)
	workers := maps.Clone(spec.Staged.Resources)
	for _, name := range []string{spec.Keytab, spec.Krb5Conf, spec.HadoopConf} {
		if name != "" {
			if _, ok := workers[name]; !ok {
				return yarn.LaunchContext{}, fmt.Errorf("build AM launch context: %s is not staged", name)
			}
			delete(workers, name)
		}
	}
	enc, err := EncodeResources(workers)
	if err != nil {
		return yarn.LaunchContext{}, err
	}
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	if _, set := env["GOMAXPROCS"]; !set && spec.Vcores > 0 {
		env["GOMAXPROCS"] = strconv.Itoa(int(spec.Vcores))
	}
	env[EnvLocalResources] = enc
	env[EnvStagingDir] = spec.Staged.Dir
	if len(spec.SchedulerAddresses) > 0 {
		env[EnvSchedulerAddresses] = strings.Join(spec.SchedulerAddresses, ",")
	}
	if len(spec.RMAddresses) > 0 {
		env[EnvRMAddresses] = strings.Join(spec.RMAddresses, ",")
	}
	if spec.DefaultFS != "" {
		env[EnvDefaultFS] = spec.DefaultFS
	}
	if spec.Keytab != "" {
		env[EnvKeytab] = spec.Keytab
	}
	if spec.Krb5Conf != "" {
		env[EnvKrb5Conf] = spec.Krb5Conf
	}
	if spec.HadoopConf != "" {
		env[EnvHadoopConf] = spec.HadoopConf
	}
	return yarn.LaunchContext{
		Commands:       []string{amplan.Command(argv)},
		Env:            env,
		LocalResources: maps.Clone(spec.Staged.Resources),
		Tokens:         spec.Tokens,
	}, nil
}
