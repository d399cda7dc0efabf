//go:build !linux

package launch

import "errors"

func setThreadMemPolicy(memPolicy) error { return errors.New("memory policies are a Linux feature") }
