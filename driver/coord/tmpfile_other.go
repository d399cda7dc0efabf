//go:build !linux

package coord

import (
	"errors"
	"os"
)

func openUnnamed(string) (*os.File, error) { return nil, errors.ErrUnsupported }
func nameUnnamed(*os.File, string) error   { return errors.ErrUnsupported }
