// Package builder drives the PyTorch build of a patched tree.
package builder
