package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FindHelper finds a helper program shipped beside container-launcher
// (xres-nvml, xres-nmrest): beside the launcher as it was called (YARN links
// localized files into the container's folder and starts
// ./container-launcher there), beside the launcher's file, then on getenv's
// PATH (LookPath). beside are the folders looked in before PATH, for the
// caller's error.
func FindHelper(name string, getenv func(string) string) (path string, beside []string, err error) {
	if strings.Contains(os.Args[0], "/") {
		beside = append(beside, filepath.Dir(os.Args[0]))
	}
	if exe, err := os.Executable(); err == nil {
		beside = append(beside, filepath.Dir(exe))
	}
	for _, dir := range beside {
		if p := filepath.Join(dir, name); IsExecutable(p) {
			return p, beside, nil
		}
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	p, err := LookPath(name, getenv)
	return p, beside, err
}

// LookPath is exec.LookPath over getenv's PATH (the container's, which
// tests replace): a file with a slash is taken as it is; an empty PATH
// entry is the current folder.
func LookPath(file string, getenv func(string) string) (string, error) {
	if strings.Contains(file, "/") {
		if IsExecutable(file) {
			return file, nil
		}
		return "", fmt.Errorf("%s: %w", file, os.ErrNotExist)
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if IsExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH: %w", file, os.ErrNotExist)
}

// IsExecutable says whether p is a regular file with an execute bit.
func IsExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
