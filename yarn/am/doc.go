// Package am is the xres ApplicationMaster core: it turns a Flink-style
// configuration into a worker plan and a YARN container profile, checks the
// profile against what the ResourceManager offers, and runs the allocate
// loop that asks for containers, launches each one as
// `container-launcher -- <worker command>` on its NodeManager, replaces
// failed workers and reports the outcome.
//
// The package speaks to YARN only through small interfaces declared here
// (RMClient, NMClient, LogFetcher) in yarn's Go types (yarn.Container,
// yarn.AllocateRequest, …), so the core is unit-tested with hand-written
// fakes and the Hadoop RPC clients (*yarn.AMRMClient, *yarn.NMClient)
// plug in as they are; it never sees a generated proto.
package am
