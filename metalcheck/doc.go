// Package metalcheck audits MPS sources for thread-safety hazards and probes Metal.
package metalcheck
