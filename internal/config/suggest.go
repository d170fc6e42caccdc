package config

import (
	"reflect"
	"slices"
	"strings"
)

// unknownKeyMsg is the message for a key that names no setting, with the nearest ones that
// do when some are near.
func unknownKeyMsg(key []string) string {
	const all = "`mpspatch config --default` lists every key"
	if s := suggest(key); len(s) > 0 {
		return "unknown key; did you mean " + strings.Join(s, " or ") + "? (" + all + ")"
	}
	return "unknown key (" + all + ")"
}

// knownKeys lists every dotted key of t's fields, tables included, depth first.
func knownKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		out = append(out, key)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, knownKeys(f.Type, key)...)
		}
	}
	return out
}

// suggest returns the known keys a person most likely meant by key, nearest first; none
// when nothing is near, since a wrong guess costs more than no guess. Three ways to be
// near: a small edit of the whole dotted key (verify.profil, build.jbos, bild); a name
// under the same table that one of the two begins (patches.directory: patches.dir); or
// the same name under another table ([build] device: verify.device).
func suggest(key []string) []string {
	if len(key) == 0 {
		return nil
	}
	typed := strings.Join(key, ".")
	known := knownKeys(configType, "")
	last := key[len(key)-1]

	best, bestD := "", -1
	for _, k := range known {
		if d := editDistance(typed, k); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD >= 0 && bestD <= closeEnough(last) {
		return []string{best}
	}

	parent := strings.Join(key[:len(key)-1], ".")
	var out []string
	for _, k := range known {
		kParent, kLast := splitLast(k)
		if kParent != parent {
			continue
		}
		short, long := kLast, last
		if len(short) > len(long) {
			short, long = long, short
		}
		if len(short) >= 3 && strings.HasPrefix(long, short) {
			out = append(out, k)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, k := range known {
		if _, kLast := splitLast(k); kLast == last {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func splitLast(k string) (parent, last string) {
	i := strings.LastIndex(k, ".")
	if i < 0 {
		return "", k
	}
	return k[:i], k[i+1:]
}

// closeEnough is how many edits a name of this length may be from the one meant: one for
// short names, where two edits make another word, up to three for long ones.
func closeEnough(name string) int {
	switch n := len(name); {
	case n <= 3:
		return 1
	case n <= 7:
		return 2
	default:
		return 3
	}
}

// editDistance is the optimal string alignment distance between a and b: insertions,
// deletions, substitutions and transpositions of adjacent bytes each count one, so
// "jbos" is one edit from "jobs". Keys are short ASCII; bytes are enough. Written here
// rather than taken from a library: it is twenty lines, and none of the module's
// dependencies offers it.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
