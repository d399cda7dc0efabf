package am

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sirupsen/logrus"
)

// StateStore keeps what one attempt of the AM knew for the next one (an
// AM restart): the application's staging folder on HDFS in the real AM
// (amcli). Load returns nil data and no error when nothing was saved; Save
// replaces what was saved, atomically (a reader sees the old or the new
// state, never a part).
type StateStore interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
}

// StateFile is the state file's name in the staging folder.
const StateFile = ".xres-am-state.json"

// stateVersion is the version of the state file's format. A file of
// another version is ignored (with a warning), as a missing one is.
const stateVersion = 1

// savedState is the state file: what an attempt knew of the work done.
//
//	{"version":1, "app":"application_…",
//	 "groups":[{"name":"", "succeeded":3, "failures":1, "restarts":2}],
//	 "live":[{"id":"container_…", "group":"", "node":"host:port", "http":"host:8042"}]}
//
// groups has one entry per worker group, in order: how many of its
// workers exited 0, failed (counted against yarn.maximum-failed-containers)
// or were replaced. live lists the workers the attempt had started and
// that were running when it saved.
type savedState struct {
	Version int          `json:"version"`
	App     string       `json:"app"`
	Groups  []savedGroup `json:"groups"`
	Live    []savedLive  `json:"live"`
}

type savedGroup struct {
	Name      string `json:"name"`
	Succeeded int    `json:"succeeded"`
	Failures  int    `json:"failures"`
	Restarts  int    `json:"restarts"`
}

// A live worker's rank (nil: none, e.g. a group without ranks saved by an
// older AM) or whether it was a standby spare: the next attempt gives each
// adopted container the same (a rank's worker was started with it).
type savedLive struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	Node  string `json:"node"`
	HTTP  string `json:"http,omitempty"`
	Rank  *int   `json:"rank,omitempty"`
	Spare bool   `json:"spare,omitempty"`
}

// snapshotLocked is the state to save now.
func (a *AM) snapshotLocked() savedState {
	s := savedState{Version: stateVersion, App: a.cfg.AppID}
	for _, g := range a.groups {
		s.Groups = append(s.Groups, savedGroup{Name: g.Name, Succeeded: g.succeeded, Failures: g.failures, Restarts: g.restarts})
	}
	s.Live = make([]savedLive, 0, len(a.workers.running))
	for _, w := range a.workers.running {
		l := savedLive{ID: w.c.ID, Group: w.g.Name, Node: w.c.NodeID, HTTP: w.c.NodeHTTP, Spare: w.spare}
		if w.rank >= 0 {
			r := w.rank
			l.Rank = &r
		}
		s.Live = append(s.Live, l)
	}
	// Map order is random: sorted, the same state saves as the same bytes.
	slices.SortFunc(s.Live, func(x, y savedLive) int {
		switch {
		case x.ID < y.ID:
			return -1
		case x.ID > y.ID:
			return 1
		}
		return 0
	})
	return s
}

// loadState takes in what an earlier attempt saved: each group's counts
// (its workers that exited 0 are not run again) and the workers it had
// started. A missing, unreadable, corrupt or foreign file leaves the AM as
// a first attempt, with a warning.
func (a *AM) loadState(ctx context.Context) {
	if a.cfg.State == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	data, err := a.cfg.State.Load(cctx)
	cancel()
	if err != nil {
		a.log.WithError(err).Warn("could not read the earlier attempt's state; workers that finished under it may run again")
		return
	}
	if data == nil {
		return
	}
	s, err := a.parseState(data)
	if err != nil {
		a.log.WithError(err).Warn("ignoring the earlier attempt's state file; workers that finished under it may run again")
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	byName := map[string]*group{}
	for i, g := range a.groups {
		sg := s.Groups[i]
		byName[g.Name] = g
		g.succeeded, g.failures, g.restarts = sg.Succeeded, sg.Failures, sg.Restarts
		g.pending = max(g.Plan.Workers+g.Plan.Spares-g.succeeded, 0)
	}
	a.prevLive = map[string]savedLive{}
	for _, l := range s.Live {
		if byName[l.Group] != nil {
			a.prevLive[l.ID] = l
		}
	}
	t := a.totalsLocked()
	a.log.WithFields(logrus.Fields{"succeeded": t.succeeded, "failed": t.failures, "replaced": t.restarts, "running": len(a.prevLive)}).
		Info("took over the earlier attempt's state: its finished workers are not run again")
}

// parseState checks a state file: its version, application and groups.
func (a *AM) parseState(data []byte) (savedState, error) {
	var s savedState
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", StateFile, err)
	}
	if s.Version != stateVersion {
		return s, fmt.Errorf("%s: version %d, this AM reads version %d", StateFile, s.Version, stateVersion)
	}
	if a.cfg.AppID != "" && s.App != a.cfg.AppID {
		return s, fmt.Errorf("%s: saved by application %q, this is %q", StateFile, s.App, a.cfg.AppID)
	}
	if len(s.Groups) != len(a.groups) {
		return s, fmt.Errorf("%s: %d worker groups saved, the application has %d", StateFile, len(s.Groups), len(a.groups))
	}
	for i, g := range a.groups {
		sg := s.Groups[i]
		if sg.Name != g.Name {
			return s, fmt.Errorf("%s: group %d is %q, the application's is %q", StateFile, i+1, sg.Name, g.Name)
		}
		if sg.Succeeded < 0 || sg.Failures < 0 || sg.Restarts < 0 {
			return s, fmt.Errorf("%s: group %q has negative counts", StateFile, g.Name)
		}
	}
	return s, nil
}

// stateSaver writes snapshots in the background, the newest only: a slow
// HDFS delays no heartbeat, and a snapshot not yet written is replaced by
// a newer one.
type stateSaver struct {
	ch   chan []byte
	done chan struct{}
}

// startSaver starts the saver, when the AM has a StateStore.
func (a *AM) startSaver(ctx context.Context) {
	if a.cfg.State == nil {
		return
	}
	s := &stateSaver{ch: make(chan []byte, 1), done: make(chan struct{})}
	a.saver = s
	go func() {
		defer close(s.done)
		failing := false
		for data := range s.ch {
			cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
			err := a.cfg.State.Save(cctx, data)
			cancel()
			switch {
			case err != nil && !failing:
				a.log.WithError(err).Warn("could not save the AM's state for a next attempt; retrying with the next change")
			case err == nil && failing:
				a.log.Info("saved the AM's state again")
			}
			failing = err != nil
		}
	}()
}

// saveState hands the saver a snapshot when the workers changed since the
// last one.
func (a *AM) saveState() {
	if a.saver == nil {
		return
	}
	a.mu.Lock()
	if a.workers.version == a.savedVersion {
		a.mu.Unlock()
		return
	}
	a.savedVersion = a.workers.version
	s := a.snapshotLocked()
	a.mu.Unlock()
	data, err := json.Marshal(s)
	if err != nil {
		a.log.WithError(err).Warn("could not encode the AM's state")
		return
	}
	select {
	case <-a.saver.ch: // not written yet: the newer replaces it
	default:
	}
	a.saver.ch <- data
}

// stopSaver writes the last snapshot handed over and stops the saver.
func (a *AM) stopSaver() {
	if a.saver == nil {
		return
	}
	close(a.saver.ch)
	<-a.saver.done
	a.saver = nil
}
