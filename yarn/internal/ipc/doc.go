// Package ipc speaks Hadoop's IPC protocol (RPC version 9, protobuf engine)
// over TCP: the connection preamble, SASL negotiation, the connection
// context, length-prefixed framing, call ids with many calls in flight on one
// connection (packets queued by concurrent callers leave in one write), pings
// while calls wait, and Java exceptions turned into typed Go errors.
//
// It knows nothing about YARN: the protocol class name and the
// authentication are parameters, so the ResourceManager client, the
// ApplicationMaster client and the NodeManager client share one transport.
package ipc
