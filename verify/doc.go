// Package verify runs the Python concurrency suites against a PyTorch build and reports.
package verify
