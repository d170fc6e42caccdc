//go:build !unix

package upstream

import "errors"

type fileLock struct{}

func lockFile(string, bool) (*fileLock, error) {
	return nil, errors.New("the upstream cache needs flock (Linux or macOS)")
}

func (l *fileLock) unlock() {}
