package conf

// Hadoop configuration keys (core-site.xml, hdfs-site.xml, yarn-site.xml)
// that xres reads, declared once: every package names them through these
// constants (TestHadoopKeysDeclaredOnce), so a key spelled wrong cannot
// quietly read nothing. Flink's own yarn.* options are Options (declared.go).
const (
	HadoopDefaultFS              = "fs.defaultFS"
	HadoopTmpDir                 = "hadoop.tmp.dir"
	HadoopSecurityAuthentication = "hadoop.security.authentication"
	HadoopRPCProtection          = "hadoop.rpc.protection"
	HadoopHTTPStaticUser         = "hadoop.http.staticuser.user"
	HadoopHTTPAuthenticationType = "hadoop.http.authentication.type"
	HadoopNNPrincipal            = "dfs.namenode.kerberos.principal"

	HadoopYarnHTTPPolicy = "yarn.http.policy"
	// HadoopWebProxyAddress is the standalone web proxy's address; unset,
	// the proxy runs inside the RM.
	HadoopWebProxyAddress = "yarn.web-proxy.address"

	HadoopRMHostname                    = "yarn.resourcemanager.hostname"
	HadoopRMAddress                     = "yarn.resourcemanager.address"
	HadoopRMSchedulerAddress            = "yarn.resourcemanager.scheduler.address"
	HadoopRMResourceTrackerAddress      = "yarn.resourcemanager.resource-tracker.address"
	HadoopRMAdminAddress                = "yarn.resourcemanager.admin.address"
	HadoopRMWebappAddress               = "yarn.resourcemanager.webapp.address"
	HadoopRMWebappHTTPSAddress          = "yarn.resourcemanager.webapp.https.address"
	HadoopRMHAEnabled                   = "yarn.resourcemanager.ha.enabled"
	HadoopRMHAIDs                       = "yarn.resourcemanager.ha.rm-ids"
	HadoopRMConnectMaxWait              = "yarn.resourcemanager.connect.max-wait.ms"
	HadoopRMConnectRetryInterval        = "yarn.resourcemanager.connect.retry-interval.ms"
	HadoopRMPrincipal                   = "yarn.resourcemanager.principal"
	HadoopRMPlacementConstraintsHandler = "yarn.resourcemanager.placement-constraints.handler"

	HadoopNMHostname                 = "yarn.nodemanager.hostname"
	HadoopNMAddress                  = "yarn.nodemanager.address"
	HadoopNMWebappAddress            = "yarn.nodemanager.webapp.address"
	HadoopNMWebappHTTPSAddress       = "yarn.nodemanager.webapp.https.address"
	HadoopNMResourcePlugins          = "yarn.nodemanager.resource-plugins"
	HadoopNMPluggableDeviceFramework = "yarn.nodemanager.pluggable-device-framework.enabled"
	HadoopNMPluggableDeviceClasses   = "yarn.nodemanager.pluggable-device-framework.device-classes"
	HadoopNMRemoteAppLogDir          = "yarn.nodemanager.remote-app-log-dir"

	HadoopLogAggregationEnable = "yarn.log-aggregation-enable"
	HadoopTFileRemoteAppLogDir = "yarn.log-aggregation.TFile.remote-app-log-dir"
)
