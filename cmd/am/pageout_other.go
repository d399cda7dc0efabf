//go:build !linux

package main

// pageOutBinary is Linux-only (pageout_linux.go).
func pageOutBinary() error { return nil }
