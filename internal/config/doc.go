// Package config reads mpspatch.toml.
//
// Decoding is strict: an unknown key or a value of the wrong type is an error that names the
// file, the line and the key, because a typo in a CI config must not silently fall back to a
// default. A complete default is embedded (default.toml), so the tool works with no file.
package config
