// Package am is the xres ApplicationMaster core: it reads a Flink-style
// configuration once into Settings (Load: the worker groups' plans and YARN
// container profiles, heartbeats, fault bounds, the tracking server's
// address, the AM container and application), checks each
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
