package am

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/xres/xres/yarn/amstate"
)

// snapshotLocked is the state to save now.
func (a *AM) snapshotLocked() amstate.State {
	s := amstate.State{Version: amstate.Version, App: a.cfg.AppID}
	for _, g := range a.groups {
		s.Groups = append(s.Groups, amstate.Group{Name: g.Name, Succeeded: g.succeeded, Failures: g.failures, Restarts: g.restarts})
	}
	s.Live = make([]amstate.Live, 0, len(a.workers.running))
	for _, w := range a.workers.running {
		l := amstate.Live{ID: w.c.ID, Group: w.g.Name, Node: w.c.NodeID, HTTP: w.c.NodeHTTP, Spare: w.spare}
		if w.rank >= 0 {
			r := w.rank
			l.Rank = &r
		}
		s.Live = append(s.Live, l)
	}
	// Map order is random: sorted, the same state saves as the same bytes.
	slices.SortFunc(s.Live, func(x, y amstate.Live) int {
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
	a.prevLive = map[string]amstate.Live{}
	for _, l := range s.Live {
		if byName[l.Group] != nil {
			a.prevLive[l.ID] = l
		}
	}
	t := a.totalsLocked()
	a.log.WithFields(logrus.Fields{"succeeded": t.succeeded, "failed": t.failures, "replaced": t.restarts, "running": len(a.prevLive)}).
		Info("took over the earlier attempt's state: its finished workers are not run again")
}

// parseState checks a state file against this AM's application and
// groups (amstate.Parse).
func (a *AM) parseState(data []byte) (amstate.State, error) {
	names := make([]string, len(a.groups))
	for i, g := range a.groups {
		names[i] = g.Name
	}
	return amstate.Parse(data, a.cfg.AppID, names)
}

// stateSaver writes snapshots in the background, the newest only: a slow
// HDFS delays no heartbeat, and a snapshot not yet written is replaced by
// a newer one.
type stateSaver struct {
	ch   chan []byte
	done chan struct{}
}

// startSaver starts the saver, when the AM has an amstate.Store.
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
