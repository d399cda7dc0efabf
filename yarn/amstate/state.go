// Package amstate is what one attempt of the ApplicationMaster hands the
// next (an AM restart): the state file's format (State), where it is kept
// (Store, File) and its checks (Parse). The allocate loop (yarn/am) writes
// and takes it over.
package amstate

import (
	"context"
	"encoding/json"
	"fmt"
)

// Store keeps what one attempt of the AM knew for the next one (an
// AM restart): the application's staging folder on HDFS in the real AM
// (amcli). Load returns nil data and no error when nothing was saved; Save
// replaces what was saved, atomically (a reader sees the old or the new
// state, never a part).
type Store interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
}

// File is the state file's name in the staging folder.
const File = ".xres-am-state.json"

// Version is the version of the state file's format. A file of
// another version is ignored (with a warning), as a missing one is.
const Version = 1

// State is the state file: what an attempt knew of the work done.
//
//	{"version":1, "app":"application_…",
//	 "groups":[{"name":"", "succeeded":3, "failures":1, "restarts":2}],
//	 "live":[{"id":"container_…", "group":"", "node":"host:port", "http":"host:8042"}]}
//
// groups has one entry per worker group, in order: how many of its
// workers exited 0, failed (counted against yarn.maximum-failed-containers)
// or were replaced. live lists the workers the attempt had started and
// that were running when it saved.
type State struct {
	Version int     `json:"version"`
	App     string  `json:"app"`
	Groups  []Group `json:"groups"`
	Live    []Live  `json:"live"`
}

type Group struct {
	Name      string `json:"name"`
	Succeeded int    `json:"succeeded"`
	Failures  int    `json:"failures"`
	Restarts  int    `json:"restarts"`
}

// A live worker's rank (nil: none, e.g. a group without ranks saved by an
// older AM) or whether it was a standby spare: the next attempt gives each
// adopted container the same (a rank's worker was started with it).
type Live struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	Node  string `json:"node"`
	HTTP  string `json:"http,omitempty"`
	Rank  *int   `json:"rank,omitempty"`
	Spare bool   `json:"spare,omitempty"`
}

// Parse reads a state file and checks it: its version, that app saved it
// (when app is not "") and that it has the groups named, in order.
func Parse(data []byte, app string, groups []string) (State, error) {
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", File, err)
	}
	if s.Version != Version {
		return s, fmt.Errorf("%s: version %d, this AM reads version %d", File, s.Version, Version)
	}
	if app != "" && s.App != app {
		return s, fmt.Errorf("%s: saved by application %q, this is %q", File, s.App, app)
	}
	if len(s.Groups) != len(groups) {
		return s, fmt.Errorf("%s: %d worker groups saved, the application has %d", File, len(s.Groups), len(groups))
	}
	for i, name := range groups {
		sg := s.Groups[i]
		if sg.Name != name {
			return s, fmt.Errorf("%s: group %d is %q, the application's is %q", File, i+1, sg.Name, name)
		}
		if sg.Succeeded < 0 || sg.Failures < 0 || sg.Restarts < 0 {
			return s, fmt.Errorf("%s: group %q has negative counts", File, name)
		}
	}
	return s, nil
}
