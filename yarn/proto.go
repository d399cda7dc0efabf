package yarn

// This file is the package's one escape hatch to the generated protos
// (hadoopproto/hadoopyarn): the Call methods send any request of a client's
// protocol, and the id and resource helpers build and read the messages a
// caller of Call needs. It is for callers that must speak the wire
// messages themselves (the integration suite's dummy AM and its protocol
// tests); everything else uses the clients' Go-typed methods. Only this
// file may name a hadoopproto type in an exported declaration
// (TestExportedAPIHasNoProtos).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
)

// Call sends one request of ApplicationClientProtocol (method as the
// Java interface names it, e.g. "getClusterMetrics") with failover, and
// decodes the answer into resp.
func (c *Client) Call(ctx context.Context, method string, req, resp proto.Message) error {
	return c.ep.call(ctx, method, req, resp)
}

// Call sends one request of ApplicationMasterProtocol with failover. It
// bypasses the client's bookkeeping: an "allocate" sent this way carries
// the response_id the caller set, and a rolled AMRMToken in its answer is
// not taken up.
func (c *AMRMClient) Call(ctx context.Context, method string, req, resp proto.Message) error {
	return c.ep.call(ctx, method, req, resp)
}

// Call sends one request of ContainerManagementProtocol to node (host:port)
// with the NMToken the RM issued for it.
func (c *NMClient) Call(ctx context.Context, node string, nmToken security.Token, method string, req, resp proto.Message) error {
	ep, err := c.endpoint(node, nmSecurityToken(nmToken))
	if err != nil {
		return err
	}
	return ep.call(ctx, method, req, resp)
}

// SubmissionProto is the ApplicationSubmissionContext SubmitApplication
// sends for sub.
func SubmissionProto(sub Submission) (*hadoopyarn.ApplicationSubmissionContextProto, error) {
	return submissionProto(sub)
}

// LaunchProto is the ContainerLaunchContext StartContainer sends for l
// (and SubmitApplication for the AM container).
func LaunchProto(l LaunchContext) *hadoopyarn.ContainerLaunchContextProto { return launchProto(l) }

// containerIDBits is how many low bits of ContainerIdProto.id hold the
// container number; the RM epoch sits above them.
const containerIDBits = 40

// ApplicationID formats an application id as YARN prints it:
// application_<cluster timestamp>_<id, 4 digits at least>.
func ApplicationID(p *hadoopyarn.ApplicationIdProto) string {
	return fmt.Sprintf("application_%d_%04d", p.GetClusterTimestamp(), p.GetId())
}

// AttemptID formats appattempt_<ts>_<app>_<attempt, 6 digits>.
func AttemptID(p *hadoopyarn.ApplicationAttemptIdProto) string {
	a := p.GetApplicationId()
	return fmt.Sprintf("appattempt_%d_%04d_%06d", a.GetClusterTimestamp(), a.GetId(), p.GetAttemptId())
}

// ContainerID formats container_[e<epoch>_]<ts>_<app>_<attempt 2>_<n 6>.
func ContainerID(p *hadoopyarn.ContainerIdProto) string {
	att := p.GetAppAttemptId()
	app := att.GetApplicationId()
	if app == nil {
		app = p.GetAppId()
	}
	return formatContainerID(app.GetClusterTimestamp(), app.GetId(), att.GetAttemptId(), p.GetId())
}

// formatContainerID is ContainerID of its fields: the application's
// cluster timestamp and number, the attempt, and the id (epoch and
// container number).
func formatContainerID(ts int64, app, attempt int32, id int64) string {
	epoch := id >> containerIDBits
	n := id & (1<<containerIDBits - 1)
	// Appended by hand, not with fmt: an allocate answer converts
	// thousands of them on the AM's heartbeat.
	b := make([]byte, 0, 48)
	b = append(b, "container_"...)
	if epoch > 0 {
		b = append(appendPadded(append(b, 'e'), epoch, 2), '_')
	}
	b = append(appendPadded(b, ts, 1), '_')
	b = append(appendPadded(b, int64(app), 4), '_')
	b = append(appendPadded(b, int64(attempt), 2), '_')
	return string(appendPadded(b, n, 6))
}

// appendPadded appends n in decimal, zero-padded to width digits as
// fmt's %0<width>d does (the sign first).
func appendPadded(b []byte, n int64, width int) []byte {
	var d [20]byte
	u := uint64(n)
	if n < 0 {
		b = append(b, '-')
		u = uint64(-n)
		width--
	}
	i := len(d)
	for u >= 10 {
		i--
		d[i] = byte('0' + u%10)
		u /= 10
	}
	i--
	d[i] = byte('0' + u)
	for k := len(d) - i; k < width; k++ {
		b = append(b, '0')
	}
	return append(b, d[i:]...)
}

// NodeID formats host:port.
func NodeID(p *hadoopyarn.NodeIdProto) string {
	return p.GetHost() + ":" + strconv.FormatInt(int64(p.GetPort()), 10)
}

// ParseApplicationID parses application_<ts>_<id>. A field outside YARN's
// range (negative, or a number above int32) is an error, never wrapped
// into another application's id.
func ParseApplicationID(s string) (*hadoopyarn.ApplicationIdProto, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || parts[0] != "application" {
		return nil, fmt.Errorf("parse application id %q: want application_<timestamp>_<number>", s)
	}
	ts, err1 := idField(parts[1], 63)
	id, err2 := idField(parts[2], 31)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("parse application id %q: want application_<timestamp>_<number>: %w", s, errors.Join(err1, err2))
	}
	return &hadoopyarn.ApplicationIdProto{Id: proto.Int32(int32(id)), ClusterTimestamp: proto.Int64(ts)}, nil
}

// idField parses a non-negative decimal id field of at most bits bits.
func idField(s string, bits int) (int64, error) {
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number from 0 to %d", s, uint64(1)<<bits-1)
	}
	return int64(n), nil
}

// epochBits is how many bits the RM epoch may have above the container
// number in ContainerIdProto.id (an int64).
const epochBits = 63 - containerIDBits

// ParseContainerID parses a container id such as the CONTAINER_ID
// variable the NodeManager sets: container_[e<epoch>_]<ts>_<app>_<attempt>_<n>.
// A field outside YARN's range is an error, never wrapped.
func ParseContainerID(s string) (*hadoopyarn.ContainerIdProto, error) {
	bad := func(err error) error {
		if err != nil {
			return fmt.Errorf("parse container id %q: want container_[e<epoch>_]<timestamp>_<app>_<attempt>_<number>: %w", s, err)
		}
		return fmt.Errorf("parse container id %q: want container_[e<epoch>_]<timestamp>_<app>_<attempt>_<number>", s)
	}
	parts := strings.Split(s, "_")
	if len(parts) < 5 || parts[0] != "container" {
		return nil, bad(nil)
	}
	parts = parts[1:]
	var epoch int64
	if e, ok := strings.CutPrefix(parts[0], "e"); ok {
		v, err := idField(e, epochBits)
		if err != nil {
			return nil, bad(fmt.Errorf("epoch: %w", err))
		}
		epoch = v
		parts = parts[1:]
	}
	if len(parts) != 4 {
		return nil, bad(nil)
	}
	var nums [4]int64
	for i, bits := range [4]int{63, 31, 31, containerIDBits} {
		n, err := idField(parts[i], bits)
		if err != nil {
			return nil, bad(err)
		}
		nums[i] = n
	}
	app := &hadoopyarn.ApplicationIdProto{Id: proto.Int32(int32(nums[1])), ClusterTimestamp: proto.Int64(nums[0])}
	att := &hadoopyarn.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(int32(nums[2]))}
	return &hadoopyarn.ContainerIdProto{AppId: app, AppAttemptId: att, Id: proto.Int64(epoch<<containerIDBits | nums[3])}, nil
}

// TokenAttempt decodes the application attempt an AMRMToken or NMToken
// was issued to (both identifiers start with the attempt id in field 1).
func TokenAttempt(t *security.Token) (*hadoopyarn.ApplicationAttemptIdProto, error) {
	if t == nil {
		return nil, ErrNoToken
	}
	id := &hadoopyarn.AMRMTokenIdentifierProto{}
	if err := proto.Unmarshal(t.Identifier, id); err != nil || id.GetAppAttemptId() == nil {
		return nil, fmt.Errorf("decode %s identifier: not a YARN protobuf identifier", t.Kind)
	}
	return id.GetAppAttemptId(), nil
}

// ResourceValue returns the amount of resource name in r: "memory-mb" and
// "vcores" read fields 1 and 2, anything else the resource map.
func ResourceValue(r *hadoopyarn.ResourceProto, name string) (int64, bool) {
	switch name {
	case "memory-mb", "memory":
		return r.GetMemory(), r.Memory != nil
	case "vcores":
		return int64(r.GetVirtualCores()), r.VirtualCores != nil
	}
	for _, ri := range r.GetResourceValueMap() {
		if ri.GetKey() == name {
			return ri.GetValue(), true
		}
	}
	return 0, false
}

// NewResource builds a ResourceProto of memory (MiB), vcores and extra
// countable resources such as {"yarn.io/gpu": 1}.
func NewResource(memoryMB int64, vcores int32, extra map[string]int64) *hadoopyarn.ResourceProto {
	r := &hadoopyarn.ResourceProto{Memory: proto.Int64(memoryMB), VirtualCores: proto.Int32(vcores)}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		r.ResourceValueMap = append(r.ResourceValueMap, &hadoopyarn.ResourceInformationProto{
			Key: proto.String(k), Value: proto.Int64(extra[k]), Units: proto.String(""),
			Type: hadoopyarn.ResourceTypesProto_COUNTABLE.Enum(),
		})
	}
	return r
}

// DecodeAllocateResponse decodes the bytes of an allocate answer as
// AMRMClient.Allocate does (the protobuf unmarshal and the conversion to
// AllocateResponse), without the client's response_id and AMRMToken
// bookkeeping; for benchmarks of the AM's heartbeat that count the decode.
func DecodeAllocateResponse(b []byte) (AllocateResponse, error) {
	a := newAllocateAnswer()
	if err := a.DecodeFrom(b); err != nil {
		return AllocateResponse{}, fmt.Errorf("decode allocate response: %w", err)
	}
	return a.response(), nil
}
