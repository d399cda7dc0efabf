// Package yarn talks to Hadoop YARN over its native RPC: the
// ApplicationClientProtocol of the ResourceManager (Client: new
// application, submit, reports, kill, nodes, metrics, resource types), the
// ApplicationMasterProtocol (AMRMClient: register, allocate, finish, with
// the AMRMToken over SASL DIGEST-MD5) and the ContainerManagementProtocol
// of NodeManagers (NMClient: start, status, stop, with NMTokens). With
// several ResourceManager addresses (RM HA) a client fails over on a
// standby answer or a connection error, with backoff. Token connections
// honour hadoop.rpc.protection (authentication, integrity, privacy);
// Kerberos connections support authentication.
//
// The clients' API speaks this package's Go types (ApplicationReport,
// NodeReport, Submission, Container, LaunchContext, Resource, the AM's
// RegisterRequest/AllocateRequest/…): *AMRMClient and *NMClient are the
// ApplicationMaster's yarn/am.RMClient and yarn/amnm.NMClient as they are.
// The generated protos (hadoopproto/hadoopyarn) stay behind that boundary;
// the one escape hatch for callers that must speak raw messages is
// proto.go (each client's Call, and the id and resource helpers).
//
// The wire layer lives in yarn/internal/ipc and yarn/internal/sasl; tokens and
// token files are in yarn/security; yarn/yarntest runs fake servers for
// tests; yarn/aggrlog reads the log files YARN log aggregation uploads to
// HDFS (TFile). RM addresses come from the Hadoop configuration (RMAddresses).
package yarn
