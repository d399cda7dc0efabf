// Package rest is a client for the YARN ResourceManager REST API
// (/ws/v1/cluster/...): cluster info and metrics, nodes with their resource
// types (yarn.io/gpu), applications, new-application, submission and kill.
//
// It authenticates with Hadoop's simple auth (?user.name=) or SPNEGO
// (gokrb5), retries connection errors with bounded backoff
// (go-retryablehttp), and fails over between the RMs of an HA pair: it tries
// each configured webapp address in turn, follows a standby RM's 307
// redirect to the active one and remembers which RM answered. Every call
// takes a context; an RM error comes back as a *RemoteError carrying the
// HTTP status and the RM's RemoteException (exception, javaClassName,
// message), and matches ErrNotFound, ErrBadRequest or ErrUnauthorized with
// errors.Is.
//
// RM wraps a Client in yarn's Go types (yarn.ApplicationReport,
// yarn.NodeReport, yarn.Submission, …), the same ones the RPC client
// returns, for yarn/submit's ClusterRM.
//
// The endpoints come from the Hadoop configuration through
// yarn.RMWebappURLs; this package does not read configuration itself.
package rest
