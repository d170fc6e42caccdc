// Package confined writes mpspatch's own files inside a tree (the state, logs and reports
// of `mpspatch run`) so that nothing planted in the tree can send a write elsewhere.
//
// A checkout is outside input: it can carry `.mpspatch -> /somewhere` or
// `.mpspatch/run -> ../.git/hooks`. os.Root alone refuses links that leave the tree but
// follows those that stay inside it, so a Dir is reached one component at a time: each
// component is looked at without following it (lstat), must be a directory, is opened
// as a root of its own, and must be the very directory that was looked at (same device
// and inode), so a link swapped in between is caught too. A symbolic link, a file where
// a directory should be, or a `.git` component is refused with an *UnsafeError naming the
// path, before anything is written.
//
// Files are written whole (a temporary file in the same directory, then a rename), so a
// link planted at a file's own name is replaced, never followed; files are read only
// when they are regular files, up to a bound.
package confined
