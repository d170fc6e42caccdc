package cli

import (
	"fmt"
	"io"
)

// intentReport is one Intent: trailer's verdict after apply.
type intentReport struct {
	Patch  string `json:"patch"`
	Line   int    `json:"line"`
	Intent string `json:"intent"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

func failedIntents(rs []intentReport) int {
	n := 0
	for _, r := range rs {
		if !r.OK {
			n++
		}
	}
	return n
}

func writeIntentsText(w io.Writer, p *printer, rs []intentReport) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "intents: %d of %d hold\n", len(rs)-failedIntents(rs), len(rs))
	for _, r := range rs {
		if r.OK {
			continue
		}
		fmt.Fprintf(w, "  %s %s:%d: %s\n    %s\n", p.Paint(red, "FAIL"), r.Patch, r.Line, r.Intent, r.Detail)
	}
}
