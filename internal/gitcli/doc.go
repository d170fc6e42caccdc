// Package gitcli runs typed git operations through the real git binary.
package gitcli
