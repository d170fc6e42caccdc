package gitcli

import "errors"

// errNoProcessTable says the processes of this system cannot be listed from here.
var errNoProcessTable = errors.New("cannot list processes on this system")
