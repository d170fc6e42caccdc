// Package config reads mpspatch.toml.
//
// Decoding is strict: an unknown key or a value of the wrong type is an error, because a
// typo in a CI config must not silently fall back to a default. Every error is an *Error
// at the file, line and column of the key or value, in the config's own words: what the
// key takes and what the file has ("want an integer, have the string \"8\""), never the
// decoder's Go types; an unknown key names the key meant when one is near. Values judged
// after decoding (validate) and values found wrong only when used (Config.KeyError, for a
// patches.dir that is no series) are reported at their line too. A complete default is
// embedded (default.toml), so the tool works with no file.
package config
