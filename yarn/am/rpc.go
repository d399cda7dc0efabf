package am

import "github.com/xres/xres/yarn"

// The Hadoop RPC clients implement the AM's seams themselves: they take
// and return yarn's Go types and keep the protos behind their own
// boundary.
var (
	_ RMClient   = (*yarn.AMRMClient)(nil)
	_ NodeLister = (*yarn.Client)(nil)
)

// WorkerPriority is the YARN priority of the worker ask.
const WorkerPriority = yarn.DefaultPriority

// WorkerAllocationTag tags every worker container asked with a placement
// constraint; the constraint counts the containers of this application
// carrying it.
const WorkerAllocationTag = yarn.DefaultAllocationTag

// NewRPCRMClient returns the Hadoop RPC ApplicationMasterProtocol client
// as the AM's RMClient (it is one; nothing is converted here).
func NewRPCRMClient(c *yarn.AMRMClient) RMClient { return c }
