package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/redact"
)

// gitFailureCodes are the exit codes of the git failures gitcli recognises: a name the
// user gave that does not exist is a usage error, an unreachable remote an environment
// one. Anything else keeps the default failure code.
var gitFailureCodes = map[gitcli.FailureKind]int{
	gitcli.FailUnknownRevision:  ExitUsage,
	gitcli.FailMissingRemoteRef: ExitUsage,
	gitcli.FailNoRepository:     ExitUsage,
	gitcli.FailUnreachable:      ExitUnsupported,
}

// describeGitFailure is the one place a failed git command becomes what the user sees:
// a recognised failure is one sentence naming what is wrong and the fix, with its exit
// code; every failure names the log that holds git's whole output (written here, under
// the user's cache directory, when the command kept no log of its own). err is returned
// as it is when no git command failed.
func describeGitFailure(err error) error {
	var ge *gitcli.Error
	if !errors.As(err, &ge) {
		return err
	}
	log := ge.LogPath
	if log == "" {
		log = writeGitLog(ge)
	}
	msg := ge.Summary()
	switch {
	case msg != "" && log != "":
		msg += "; git's output is in " + log
	case msg == "":
		// Unrecognised: the attempt's own wrapping says what was being done, and
		// git's own last lines why; a log the command kept is named in it already.
		msg = err.Error()
		if ge.LogPath == "" && log != "" {
			msg += "; git's output is in " + log
		}
	}
	out := error(&logError{err: &messageError{msg: msg, err: err}, log: log})
	if code, ok := gitFailureCodes[ge.Kind()]; ok {
		return withCode(code, out)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return withCode(ee.code, out)
	}
	return out
}

// messageError shows msg in place of err's own text, keeping err in the chain for
// errors.Is and errors.As.
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }

// writeGitLog keeps a failed git command's argv and output in a new file under the
// user's cache directory and returns its path, or "" when none can be written (the
// message then goes without a log; the failure itself is what matters).
func writeGitLog(ge *gitcli.Error) string {
	cache, err := os.UserCacheDir()
	if err != nil || cache == "" {
		return ""
	}
	dir := filepath.Join(cache, "mpspatch", "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	now := time.Now().UTC()
	path := filepath.Join(dir, fmt.Sprintf("git-%s-%d.log", now.Format("20060102T150405.000Z"), os.Getpid()))
	in := ge.Dir
	if in == "" {
		in = "."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n$ git %s\n# in %s, exit status %d\n", now.Format(time.RFC3339), strings.Join(ge.Args, " "), in, ge.ExitCode)
	b.WriteString(ge.Output)
	if ge.Output != "" && !strings.HasSuffix(ge.Output, "\n") {
		b.WriteString("\n")
	}
	// git's argv and output can hold a URL with a credential.
	if err := atomicfile.WriteBytes(path, []byte(redact.Text(b.String())), atomicfile.Options{}); err != nil {
		return ""
	}
	return path
}
