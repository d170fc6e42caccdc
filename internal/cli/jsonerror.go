package cli

import (
	"errors"

	"github.com/mpspatch/mpspatch/builder"
	"github.com/mpspatch/mpspatch/internal/config"
	"github.com/mpspatch/mpspatch/internal/run"
	"github.com/mpspatch/mpspatch/internal/series"
)

// newErrorBody builds the --json error member for a failed command: the exit code, its
// stable name, the message users see on stderr, and what a script can act on without
// parsing the message (the log to read, the config key to fix, the hunks that conflict).
func newErrorBody(err error, code int) *errorBody {
	return &errorBody{Code: code, Name: codeName(code), Message: errorMessage(err, code), Details: errorDetails(err)}
}

// errorDetails collects the machine-readable facts the known error types carry. It is
// never nil, so "details" is always an object.
func errorDetails(err error) map[string]any {
	d := map[string]any{}
	var cfg *config.Error
	if errors.As(err, &cfg) {
		d["file"], d["line"], d["column"], d["key"] = cfg.File, cfg.Line, cfg.Column, cfg.Key
	}
	var be *builder.BuildError
	if errors.As(err, &be) {
		d["log"], d["status"] = be.LogPath, be.Result.String()
		if len(be.FirstErrors) > 0 {
			d["first_errors"] = be.FirstErrors
		}
	}
	var re *run.ExitError
	if errors.As(err, &re) {
		d["argv"], d["status"] = re.Argv, re.Result.String()
		if re.LogPath != "" {
			d["log"] = re.LogPath
		}
	}
	var ce *series.ConflictError
	if errors.As(err, &ce) {
		d["conflicts"] = ce.Conflicts
	}
	var le *logError
	if errors.As(err, &le) {
		d["log"] = le.log
	}
	return d
}

// logError names the log file behind a failure, for the "log" detail of the --json error.
type logError struct {
	err error
	log string
}

func (e *logError) Error() string { return e.err.Error() }
func (e *logError) Unwrap() error { return e.err }
