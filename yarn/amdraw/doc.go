// Package amdraw draws the tracking page's timeline: one bar per container
// of an amstatus.Status page, a segment per step of its start (Draw), as
// inline SVG.
package amdraw
