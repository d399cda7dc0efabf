// Package version is what `am --version` and `container-launcher --version`
// print: the module version and commit Go stamped into the binary
// (runtime/debug build info), and the Hadoop versions and wire protocols
// xres was tested against (the minicluster's Hadoop, docker/hadoop-minicluster).
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Tested is the Hadoop release the integration suite runs against
// (docker/hadoop-minicluster/pom.xml, hadoop.version) and the protocols
// spoken to it.
const Tested = "Hadoop 3.4.1 (Hadoop IPC version 9, protobuf RPC engine; " +
	"ApplicationClientProtocolPB, ApplicationMasterProtocolPB, ContainerManagementProtocolPB version 1; " +
	"ResourceManager REST /ws/v1/cluster)"

// String is the version text of program, from the running binary's build
// info.
func String(program string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Format(program, nil)
	}
	return Format(program, info)
}

// Format renders the version text of program from info (nil: none).
func Format(program string, info *debug.BuildInfo) string {
	ver, commit, when, dirty, goVer := "(unknown)", "unknown (built outside git or with -buildvcs=false)", "", false, ""
	if info != nil {
		if v := info.Main.Version; v != "" {
			ver = v
		}
		goVer = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", program, ver)
	fmt.Fprintf(&b, "commit: %s", commit)
	if when != "" {
		fmt.Fprintf(&b, " (%s)", when)
	}
	if dirty {
		b.WriteString(" with uncommitted changes")
	}
	b.WriteString("\n")
	if goVer != "" {
		fmt.Fprintf(&b, "go: %s\n", goVer)
	}
	fmt.Fprintf(&b, "tested against: %s\n", Tested)
	return b.String()
}
