package conf

// The Flink and xres options xres reads, declared once. The drivers' params
// (external-resource.<name>.param.*) are declared by each driver with
// driver.Declare, which registers them here too. The configuration
// reference is generated from the whole registry (go run ./conf/cmd/gendoc,
// which links every built-in driver).
// Keys with <placeholders> are patterns: use Option.For to get one key.

// External resources (Flink's ExternalResourceOptions and the YARN and
// Kubernetes config-key suffixes).
var (
	ExternalResources = Register(Option{
		Key:  "external-resources",
		Type: TypeList,
		Description: "Names of the enabled external resources, ';'-separated (e.g. gpu;fpga). Only listed " +
			"names are requested or discovered. The single value none means no resources (Flink 1.13+).",
	})
	ExternalResourceAmount = Register(Option{
		Key:  "external-resource.<name>.amount",
		Type: TypeInt64,
		Description: "Amount of the resource per worker, 1 or more. A listed resource without a positive amount " +
			"is refused by every entry point (Flink skips it with a warning); a non-integer is an error.",
	})
	ExternalResourceYarnKey = Register(Option{
		Key:  "external-resource.<name>.yarn.config-key",
		Type: TypeString,
		Description: "YARN resource type requested for the resource, e.g. yarn.io/gpu or yarn.io/fpga. " +
			"Unset: the resource is not requested from YARN (discovery still runs).",
	})
	ExternalResourceK8sKey = Register(Option{
		Key:         "external-resource.<name>.kubernetes.config-key",
		Type:        TypeString,
		Description: "Kubernetes extended resource put in the worker's requests and limits, e.g. nvidia.com/gpu.",
	})
	ExternalResourceFactory = Register(Option{
		Key:  "external-resource.<name>.driver-factory.class",
		Type: TypeString,
		Description: "Driver that discovers the resource on the worker's host; Flink's " +
			"org.apache.flink.externalresource.gpu.GPUDriverFactory names xres's GPU driver. " +
			"Unset: the resource is requested but workers get no device infos.",
	})
	ExternalResourceParam = Register(Option{
		Key:  "external-resource.<name>.param.<param>",
		Type: TypeString,
		Description: "Driver parameter `<param>`, handed to the driver with the prefix stripped. Each driver " +
			"declares the params it reads (driver.Declare); they are listed below with their drivers.",
	})
)

// xres's own options.
var (
	Strict = Register(Option{
		Key:     "xres.strict",
		Type:    TypeBool,
		Default: "false",
		Description: "Strict mode: every problem Flink only warns about (duplicate config key, " +
			"a skipped file line, ...) becomes one error listing them all. Also the `--strict` flag.",
	})
	DiscoveryTimeout = Register(Option{
		Key:     "xres.discovery.timeout",
		Type:    TypeDuration,
		Default: "10 s",
		Description: "Time limit of one discovery step (discovery script, nvidia-smi, rocm-smi, device plugin), " +
			"Flink syntax (10 s, 500 ms, 1 min), for every resource whose param sets none.",
	})
	RescaleSignal = Register(Option{
		Key:  "xres.rescale.signal",
		Type: TypeString,
		Description: "Signal the launcher sends to the worker's process group when the application's worker " +
			"counts change (`$XRES_WORKERS_FILE` rewritten first): HUP, USR1, USR2, WINCH (with or without SIG), " +
			"or its number. Unset: none, the file alone (a worker that does not trap the signal would die of it).",
	})
	RescaleInterval = Register(Option{
		Key:     "xres.rescale.interval",
		Type:    TypeDuration,
		Default: "1 s",
		Description: "How often the launcher reads the AM's worker counts (`$XRES_WORKERS_URL`) to keep " +
			"`$XRES_WORKERS_FILE` current while the worker runs, under scheduler-mode: reactive or with " +
			"xres.rescale.signal set (otherwise it reads them once, before the worker starts).",
	})
)

// Options the ApplicationMaster reads (Flink's resource-manager side).
var (
	BenchNullWorker = Register(Option{
		Key:     "xres.bench.null-worker",
		Type:    TypeBool,
		Default: "false",
		Description: "Benchmark and diagnostic knob, not for applications: the AM starts each worker container " +
			"with the worker command alone, without the container-launcher and without localized files " +
			"(no devices discovered or reserved, no report, no configuration), to measure the cluster's own " +
			"cost of starting containers (`make bench-am-curve`'s floor row).",
	})
	TaskManagerProcessSize = Register(Option{
		Key:  "taskmanager.memory.process.size",
		Type: TypeMemorySize,
		Description: "Total process memory of a worker: the YARN container memory (Flink's shipped " +
			"configuration uses 1728m).",
	})
	TaskManagerCPUCores = Register(Option{
		Key:         "taskmanager.cpu.cores",
		Type:        TypeFloat,
		Description: "CPU cores of a worker; rounded up to whole YARN vcores. Unset: yarn.containers.vcores.",
	})
	YarnContainerVcores = Register(Option{
		Key:         "yarn.containers.vcores",
		Type:        TypeInt,
		Default:     "-1",
		Description: "Vcores of a worker container when taskmanager.cpu.cores is unset; -1: taskmanager.numberOfTaskSlots.",
	})
	TaskManagerSlots = Register(Option{
		Key:         "taskmanager.numberOfTaskSlots",
		Type:        TypeInt,
		Default:     "1",
		Description: "Slots per worker.",
	})
	ParallelismDefault = Register(Option{
		Key:         "parallelism.default",
		Type:        TypeInt,
		Default:     "1",
		Description: "Default parallelism; with the slots per worker it sets how many workers are requested.",
	})
	SlotsMax = Register(Option{
		Key:         "slotmanager.number-of-slots.max",
		Type:        TypeInt,
		Default:     "2147483647",
		Description: "Upper bound on the slots of all workers together; no worker is requested beyond it.",
	})
	RedundantWorkers = Register(Option{
		Key:         "slotmanager.redundant-taskmanager-num",
		Type:        TypeInt,
		Default:     "0",
		Description: "Standby spares beyond the workers needed, for faster recovery: each holds its container and devices but runs no worker command until a worker fails, then takes that worker's rank. Counted in neither the workers (XRES_WORKERS) nor the application's success.",
	})
	YarnMaxFailedContainers = Register(Option{
		Key:         "yarn.maximum-failed-containers",
		Type:        TypeInt,
		Description: "Failed worker containers tolerated before the application fails. Unset: the number of workers initially requested.",
	})
	SlotRequestTimeout = Register(Option{
		Key:         "slot.request.timeout",
		Type:        TypeDuration,
		Default:     "5 min",
		Description: "How long the ApplicationMaster waits while workers are wanted and none is granted before the application fails, naming the blacklisted hosts (a plain number is milliseconds; 0 waits for ever).",
	})
	BlacklistTimeout = Register(Option{
		Key:         "xres.yarn.blacklist.timeout",
		Type:        TypeDuration,
		Default:     "1 h",
		Description: "How long a host whose container-launcher failed (device discovery) gets no worker; then it may get one again (0: until the application ends). When every node is blacklisted the application fails with each host's last launcher error.",
	})
	YarnApplicationName = Register(Option{
		Key:         "yarn.application.name",
		Type:        TypeString,
		Description: "Name of the YARN application.",
	})
	YarnApplicationQueue = Register(Option{
		Key:         "yarn.application.queue",
		Type:        TypeString,
		Description: "YARN queue the application is submitted to.",
	})
	YarnApplicationNodeLabel = Register(Option{
		Key:         "yarn.application.node-label",
		Type:        TypeString,
		Description: "Node label expression of the ApplicationMaster's container (e.g. gpu): YARN starts the AM only on a node of that label (partition). Unset: the queue's default label.",
	})
	YarnTaskManagerNodeLabel = Register(Option{
		Key:         "yarn.taskmanager.node-label",
		Type:        TypeString,
		Description: "Node label expression of every worker ask (e.g. gpu): workers run only on nodes of that label. Unset: the queue's default label.",
	})
	YarnTags = Register(Option{
		Key:         "yarn.tags",
		Type:        TypeString,
		Description: "Comma-separated tags of the YARN application (applicationTags; some Hadoop releases lower-case them), shown by `yarn application -list` and the RM's REST API.",
	})
	YarnApplicationPriority = Register(Option{
		Key:         "yarn.application.priority",
		Type:        TypeInt,
		Default:     "-1",
		Description: "Priority of the YARN application within its queue (a higher number runs first; the RM caps it at the queue's maximum). -1: the cluster's default.",
	})
	PlacementMaxWorkersPerNode = Register(Option{
		Key:         "xres.placement.max-workers-per-node",
		Type:        TypeInt,
		Default:     "0",
		Description: "At most this many workers of the application on one node (anti-affinity for 1): the worker ask becomes a YARN SchedulingRequest tagged xres-worker with a node-scope cardinality constraint (Hadoop 3.1+; the RM needs yarn.resourcemanager.placement-constraints.handler=scheduler or placement-processor, else the application fails at its first ask naming that key). Workers that cannot be placed stay pending and the tracking page says why. 0: no limit. What Flink's cluster.evenly-spread-out-slots means on YARN.",
	})
	WorkerGroups = Register(Option{
		Key:  "xres.worker-groups",
		Type: TypeList,
		Description: "Names of the application's worker groups, ';'-separated (e.g. trainer;prep): each group has its own count, size, " +
			"external resources, worker command, ask (allocation_request_id) and failure accounting. A group's keys are the ordinary ones " +
			"under `xres.worker-group.<group>.` (letters, digits, '-' and '_' in a name). Unset: one group, configured by the plain keys.",
	})
	WorkerGroupKey = Register(Option{
		Key:  "xres.worker-group.<group>.<key>",
		Type: TypeString,
		Description: "Any worker key for one group only, winning over the plain key for that group: " +
			"xres.worker-group.trainer.external-resource.gpu.amount: 4, xres.worker-group.prep.external-resources: fpga, " +
			"xres.worker-group.prep.taskmanager.memory.process.size: 2g. The group's launchers read the same view (XRES_WORKER_GROUP in their environment).",
	})
	WorkerGroupWorkers = Register(Option{
		Key:         "xres.worker-group.<group>.workers",
		Type:        TypeInt,
		Description: "Workers of the group. Unset: ceil(parallelism.default / taskmanager.numberOfTaskSlots) as seen by the group, plus its redundant workers.",
	})
	WorkerGroupCommand = Register(Option{
		Key:         "xres.worker-group.<group>.command",
		Type:        TypeString,
		Description: "The group's worker command, split into words as a shell would (single and double quotes, backslash; no expansion). Unset: the command after -- of am submit.",
	})
	WorkerGroupDependsOn = Register(Option{
		Key:  "xres.worker-group.<group>.depends-on",
		Type: TypeList,
		Description: "Groups (';'- or ','-separated) whose workers must run before this group's start their command: a worker's " +
			"launcher reserves its devices, reports to the AM and then waits until every worker of those groups runs (and, where " +
			"they declare a port, accepts connections on it). It gets their addresses as `XRES_<GROUP>_ADDRESSES`. A cycle or an unknown group is an error.",
	})
	WorkerGroupPort = Register(Option{
		Key:  "xres.worker-group.<group>.port",
		Type: TypeString,
		Description: "The group's workers serve on a port: auto (the launcher picks a free one) or a number, which the worker gets as " +
			"XRES_PORT; or worker: the worker binds one of its own choosing and writes it, then a newline, into the file XRES_PORT_FILE " +
			"names (dependents wait until it has; not with xres.rendezvous). The AM publishes host:port per rank (`XRES_<GROUP>_ADDRESSES` " +
			"for dependents, api/rendezvous, MASTER_ADDR/TF_CONFIG under xres.rendezvous). Unset: no port.",
	})
	WorkerGroupGang = Register(Option{
		Key:     "xres.worker-group.<group>.gang",
		Type:    TypeBool,
		Default: "false",
		Description: "Gang start: no worker command of the group starts until all its workers are allocated and have reserved their " +
			"devices; after xres.gang.timeout the application fails naming what was missing (its containers released, so it cannot " +
			"deadlock against another application). A worker lost later restarts the whole gang (every rank), bounded by " +
			"yarn.maximum-failed-containers. Not with scheduler-mode: reactive.",
	})
	GangTimeout = Register(Option{
		Key:         "xres.gang.timeout",
		Type:        TypeDuration,
		Default:     "5 min",
		Description: "How long a gang group (`xres.worker-group.<group>.gang`) may wait for all its workers to be allocated and reserve their devices, at the start and after each gang restart.",
	})
	Rendezvous = Register(Option{
		Key:  "xres.rendezvous",
		Type: TypeString,
		Description: "Extra environment for a framework's own rendezvous: torch (MASTER_ADDR, MASTER_PORT: rank 0 of the group, or of its " +
			"first dependency with a port; RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) or tensorflow (TF_CONFIG with every group " +
			"that has a port as a job, this worker as its task). Unset: only the XRES_ variables.",
	})
	EvenlySpreadOutSlots = Register(Option{
		Key:  "cluster.evenly-spread-out-slots",
		Type: TypeBool,
		Description: "Flink's standalone-cluster option (spread slots over the registered TaskManagers). It has no effect on YARN: " +
			"xres warns when it is set and points to xres.placement.max-workers-per-node, which spreads the workers over nodes.",
	})
	SchedulerMode = Register(Option{
		Key:  "scheduler-mode",
		Type: TypeString,
		Description: "reactive (Flink's reactive mode): the application runs with the workers YARN grants once at least " +
			"xres.reactive.min-workers of a group run, keeps asking for the rest and takes them as capacity returns; a lost node " +
			"shrinks it instead of failing it. Unset: every wanted worker is needed.",
	})
	ReactiveMinWorkers = Register(Option{
		Key:     "xres.reactive.min-workers",
		Type:    TypeInt,
		Default: "1",
		Description: "Under scheduler-mode: reactive, the workers (of each group) the application needs running; below it the " +
			"slot.request.timeout bound applies as for a fixed count.",
	})
	KerberosLoginKeytab = Register(Option{
		Key:         "security.kerberos.login.keytab",
		Type:        TypeString,
		Description: "Keytab `am submit` logs in with on a Kerberized cluster (hadoop.security.authentication=kerberos), with security.kerberos.login.principal. Unset: the ticket cache ($KRB5CCNAME, else `/tmp/krb5cc_<uid>`).",
	})
	KerberosLoginPrincipal = Register(Option{
		Key:         "security.kerberos.login.principal",
		Type:        TypeString,
		Description: "Principal (user@REALM) of security.kerberos.login.keytab.",
	})
	KerberosKrb5Conf = Register(Option{
		Key:         "security.kerberos.krb5-conf.path",
		Type:        TypeString,
		Description: "krb5.conf `am submit` logs in with (else $KRB5_CONFIG, else /etc/krb5.conf); with a shipped keytab it is shipped to the ApplicationMaster too, which logs in with it. Unset: the AM reads $KRB5_CONFIG, else /etc/krb5.conf, of its node.",
	})
	YarnShipLocalKeytab = Register(Option{
		Key:     "yarn.security.kerberos.ship-local-keytab",
		Type:    TypeBool,
		Default: "true",
		Description: "Ship security.kerberos.login.keytab to the ApplicationMaster (as `krb5.keytab`, an APPLICATION resource, mode 0600 in the 0700 staging folder; never to the workers), " +
			"which logs in with it and obtains new HDFS delegation tokens before the old ones expire. false: the AM only has the submission's token, which ends at its max lifetime.",
	})
	DelegationTokensEnabled = Register(Option{
		Key:         "security.delegation.tokens.enabled",
		Type:        TypeBool,
		Default:     "true",
		Description: "Whether an ApplicationMaster with a shipped keytab obtains new HDFS delegation tokens for the containers it starts. false: it keeps the submission's.",
	})
	DelegationTokensRenewalRatio = Register(Option{
		Key:         "security.delegation.tokens.renewal.time-ratio",
		Type:        TypeFloat,
		Default:     "0.75",
		Description: "Share of a token's life (until the earlier of its renewal date and its max lifetime) after which the AM obtains a new one; above 0, at most 1.",
	})
	DelegationTokensRetryBackoff = Register(Option{
		Key:         "security.delegation.tokens.renewal.retry.backoff",
		Type:        TypeDuration,
		Default:     "1 h",
		Description: "Wait before the AM tries again to obtain a token after a failed try.",
	})
	TaskManagerEnv = Register(Option{
		Key:         "containerized.taskmanager.env.<VAR>",
		Type:        TypeString,
		Description: "Environment variable `<VAR>` set in every worker container.",
	})
	MasterEnv = Register(Option{
		Key:         "containerized.master.env.<VAR>",
		Type:        TypeString,
		Description: "Environment variable `<VAR>` set in the ApplicationMaster container.",
	})
	AMProcessSize = Register(Option{
		Key:         "jobmanager.memory.process.size",
		Type:        TypeMemorySize,
		Default:     "256m",
		Description: "Memory of the ApplicationMaster container.",
	})
	AMVcores = Register(Option{
		Key:         "yarn.appmaster.vcores",
		Type:        TypeInt,
		Default:     "1",
		Description: "Vcores of the ApplicationMaster container; the AM also runs with as many Go Ps (GOMAXPROCS), unless containerized.master.env.GOMAXPROCS sets it.",
	})
	ApplicationAttempts = Register(Option{
		Key:         "yarn.application-attempts",
		Type:        TypeInt,
		Default:     "1",
		Description: "How many times YARN starts the ApplicationMaster before the application fails.",
	})
	YarnHeartbeat = Register(Option{
		Key:         "yarn.heartbeat.interval",
		Type:        TypeInt,
		Default:     "5",
		Description: "Seconds between the ApplicationMaster's heartbeats to the ResourceManager.",
	})
	YarnRequestHeartbeat = Register(Option{
		Key:         "yarn.heartbeat.container-request-interval",
		Type:        TypeDuration,
		Default:     "500 ms",
		Description: "Heartbeat interval while containers are requested and not yet allocated (a plain number is milliseconds).",
	})
	RestBindAddress = Register(Option{
		Key:         "rest.bind-address",
		Type:        TypeString,
		Default:     "0.0.0.0",
		Description: "Address the ApplicationMaster's tracking server (status page and JSON API) binds to.",
	})
	RestBindPort = Register(Option{
		Key:         "rest.bind-port",
		Type:        TypeString,
		Default:     "0",
		Description: "Port of the tracking server: a port, a range (50100-50200) or a list (50100,50101) of ports 0 to 65535; 0 is any free port. Anything else is refused by am resources and am submit (exit 3).",
	})
)
