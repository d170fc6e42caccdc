//go:build !linux && !darwin

package gitcli

// scanProcesses: no process table this package can read here.
func scanProcesses(string, []string) ([]int, map[string]int, error) {
	return nil, nil, errNoProcessTable
}

func killProcess(int, string) {}
