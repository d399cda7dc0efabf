//go:build !cgo || !linux

// Command cudaholder needs cgo on Linux (see main.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "cudaholder: built without cgo (or off Linux): it cannot open a CUDA context")
	os.Exit(3)
}
