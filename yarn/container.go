package yarn

import (
	"fmt"
	"maps"
	"slices"

	"github.com/xres/xres/yarn/security"
)

// The container types shared by the RPC and REST clients, the submission
// (yarn/submit) and the ApplicationMaster (yarn/am): what a container is
// started with, and an allocated container. The RPC clients convert them
// to and from protos themselves (convert.go).

// LocalResourceType is how the NM localizes a resource.
type LocalResourceType int

// Local resource types (LocalResourceTypeProto).
const (
	Archive LocalResourceType = 1 // unpacked
	File    LocalResourceType = 2
	Pattern LocalResourceType = 3
)

// Visibility is who may share a localized resource.
type Visibility int

// Visibilities (LocalResourceVisibilityProto).
const (
	Public      Visibility = 1
	Private     Visibility = 2
	Application Visibility = 3
)

// ResourceURL locates a local resource on a Hadoop file system (URLProto).
type ResourceURL struct {
	Scheme string `json:"scheme"`
	Host   string `json:"host,omitempty"`
	Port   int32  `json:"port,omitempty"`
	File   string `json:"file"`
}

// String renders the URL as scheme://host:port/file.
func (u ResourceURL) String() string {
	host := u.Host
	if u.Port > 0 {
		host = fmt.Sprintf("%s:%d", u.Host, u.Port)
	}
	return u.Scheme + "://" + host + u.File
}

// LocalResource is one file the NM downloads into the container's working
// directory before it starts the command. Size and Timestamp must equal the
// file's length and modification time (ms), or the NM refuses it.
type LocalResource struct {
	URL        ResourceURL       `json:"url"`
	Size       int64             `json:"size"`
	Timestamp  int64             `json:"timestamp"`
	Type       LocalResourceType `json:"type"`
	Visibility Visibility        `json:"visibility"`
}

// LaunchContext is what a container is started with
// (ContainerLaunchContextProto). Tokens is an HDTS credentials blob, opaque
// here; nil on an insecure cluster. It must never carry the AMRMToken.
type LaunchContext struct {
	Commands       []string
	Env            map[string]string
	LocalResources map[string]LocalResource // link name in the work dir → resource
	Tokens         []byte
}

// String lists the commands, environment names and resources; never the
// environment values or tokens.
func (l LaunchContext) String() string {
	return fmt.Sprintf("LaunchContext{commands=%q env=%v resources=%v tokens=%d bytes}",
		l.Commands, slices.Sorted(maps.Keys(l.Env)), slices.Sorted(maps.Keys(l.LocalResources)), len(l.Tokens))
}

// Container is one allocated container (ContainerProto).
type Container struct {
	ID                  string         // container_…
	NodeID              string         // NM RPC address, host:port
	NodeHTTP            string         // NM web address, host:port
	Resource            Resource       // what was granted (may be larger than asked)
	AllocationRequestID int64          // the Ask.ID it answers; -1 when the RM set none
	Token               security.Token // container token, passed verbatim to the NM
}

// Host is the node's host name, without the port.
func (c Container) Host() string {
	for i := len(c.NodeID) - 1; i >= 0; i-- {
		if c.NodeID[i] == ':' {
			return c.NodeID[:i]
		}
	}
	return c.NodeID
}
