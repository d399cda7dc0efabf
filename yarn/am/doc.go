// Package am is the xres ApplicationMaster's allocate loop: it registers
// with the ResourceManager, asks for each worker group's containers,
// launches each one as `container-launcher -- <worker command>` on its
// NodeManager, gives the workers their ranks and rendezvous, replaces
// failed workers, blacklists bad nodes, hands its state to the next attempt
// and reports the outcome.
//
// What it runs is planned elsewhere: yarn/amplan reads the configuration
// once (amplan.Load: groups, plans, profiles, heartbeats, fault bounds) and
// builds the containers' launch. Around the loop: yarn/amweb serves its
// status, takes the launchers' reports and answers their rendezvous (the
// AM is an amweb.StatusSource), yarn/amstatus is the status it fills in,
// yarn/amdraw draws its workers' starts, yarn/amnm wraps the NodeManager
// client and yarn/amstate is the state file an AM restart takes over.
// Within the loop: yarn/amnodes keeps the cluster's nodes and the
// blacklist, yarn/amstarts orders the container starts, and amstatus
// holds the workers' start marks and report sequence numbers.
//
// The package speaks to YARN only through small interfaces (RMClient here,
// amnm.NMClient, amnm.LogFetcher) in yarn's Go types (yarn.Container,
// yarn.AllocateRequest, …), so the loop is unit-tested with hand-written
// fakes and the Hadoop RPC clients (*yarn.AMRMClient, *yarn.NMClient)
// plug in as they are; it never sees a generated proto.
package am
