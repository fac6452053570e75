//go:build !unix

package fsutil

import (
	"errors"
	"os"
)

func tryLock(*os.File) (bool, error) { return false, errors.ErrUnsupported }
