package metalcheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// defaultPaths are the directories audited when none are given (the [audit] paths default).
var defaultPaths = []string{"aten/src/ATen/mps", "aten/src/ATen/native/mps"}

// Options configure an audit.
type Options struct {
	// Root is the tree the paths are relative to.
	Root string
	// Paths are directories or files under Root; empty means defaultPaths. Directories are
	// walked recursively for .h, .hpp, .mm, .m, .cpp, .cc and .cxx files.
	Paths []string
	// Workers bounds how many files are read and analysed at once; 0 means GOMAXPROCS.
	Workers int
}

// Report is the result of an audit.
type Report struct {
	Root     string    `json:"root"`
	Files    int       `json:"files"`
	Bytes    int64     `json:"bytes"`
	Findings []Finding `json:"findings"`
}

var sourceExts = map[string]bool{".h": true, ".hpp": true, ".mm": true, ".m": true, ".cpp": true, ".cc": true, ".cxx": true}

// isSource reports whether name has an extension the audit reads.
func isSource(name string) bool { return sourceExts[strings.ToLower(filepath.Ext(name))] }

// Audit scans the sources under opts.Paths for thread-safety hazards. Files are read and
// analysed in parallel; findings come back sorted by file, line, column and rule, each with
// its fingerprint.
func Audit(ctx context.Context, opts Options) (*Report, error) {
	paths := opts.Paths
	if len(paths) == 0 {
		paths = defaultPaths
	}
	files, err := listSources(opts.Root, paths)
	if err != nil {
		return nil, err
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	all := make([]facts, len(files))
	sizes := make([]int64, len(files))
	errs := make([]error, len(files))
	// Every index is queued up front: the workers take the files in order, and this
	// goroutine, instead of feeding them, merges each file's declarations into the symbol
	// table as soon as it and the files before it are analysed (in file order, as judging
	// expects), so that little of the table is left to build after the last file.
	next := make(chan int, len(files))
	for i := range files {
		next <- i
	}
	close(next)
	done := make(chan int, len(files))
	var wg sync.WaitGroup
	for w := 0; w < workers && w < len(files); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a arena
			for i := range next {
				if ctx.Err() != nil {
					return
				}
				src, err := readInto(a.src, filepath.Join(opts.Root, filepath.FromSlash(files[i])))
				if err != nil {
					errs[i] = fmt.Errorf("audit: read %s: %w", files[i], err)
				} else {
					a.src = src
					sizes[i] = int64(len(src))
					all[i] = a.analyze(files[i], src).extract()
				}
				done <- i
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	st := newSymtab(len(files))
	ready := make([]bool, len(files))
	merged := 0
	for i := range done {
		ready[i] = true
		for merged < len(files) && ready[merged] {
			st.addFacts(&all[merged])
			merged++
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep := &Report{Root: opts.Root, Files: len(files), Findings: judgeAll(all, st)}
	for _, s := range sizes {
		rep.Bytes += s
	}
	return rep, nil
}

// AuditSources audits in-memory files (tree-relative slash paths to contents), as Audit does
// a tree. Used by the no-finding intent and by tests.
func AuditSources(files map[string][]byte) []Finding {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	all := make([]facts, len(names))
	st := newSymtab(len(names))
	for i, n := range names {
		all[i] = analyze(n, files[n]).extract()
		st.addFacts(&all[i])
	}
	return judgeAll(all, st)
}

// judgeAll resolves candidates against the declarations of all files (st, which holds
// them), sorts the findings and gives each its fingerprint.
func judgeAll(all []facts, st *symtab) []Finding {
	cg := newCallers(all)
	judged := judgeCandidates(all, st)
	var out []Finding
	keep := func(f Finding) {
		if !cg.excused(&f) {
			out = append(out, f)
		}
	}
	for fi := range all {
		for _, f := range all[fi].direct {
			keep(f)
		}
		for _, f := range judged[fi] {
			keep(f)
		}
	}
	// Rules judged over every file at once: a counter's places and locks (MPS011), and
	// calls whose callee blocks (MPS010, MPS009).
	for _, f := range judgeCounters(all, st, cg) {
		keep(f)
	}
	for _, f := range judgeDeferred(all) {
		keep(f)
	}
	sortFindings(out)
	out = dedupe(out)
	fingerprint(out)
	if out == nil {
		out = []Finding{}
	}
	return out
}

// parallelJudging is the number of candidates from which judging is split across the
// processors: it runs after the last file is analysed, alone.
const parallelJudging = 1000

// judgeCandidates judges every file's candidates, returning the findings of each file in
// candidate order. The symbol table is only read: with many candidates, runs of files
// are judged in parallel.
func judgeCandidates(all []facts, st *symtab) [][]Finding {
	judged := make([][]Finding, len(all))
	judge := func(from, to int) {
		for fi := from; fi < to; fi++ {
			for ci := range all[fi].cands {
				if f, ok := st.judge(&all[fi].cands[ci], all[fi].path); ok {
					judged[fi] = append(judged[fi], f)
				}
			}
		}
	}
	total := 0
	for fi := range all {
		total += len(all[fi].cands)
	}
	parts := runtime.GOMAXPROCS(0)
	if total < parallelJudging || parts < 2 {
		judge(0, len(all))
		return judged
	}
	// Runs of files with about the same number of candidates each.
	var wg sync.WaitGroup
	from, seen := 0, 0
	for p := 1; p <= parts; p++ {
		to := from
		for to < len(all) && (p == parts || seen < total*p/parts) {
			seen += len(all[to].cands)
			to++
		}
		wg.Add(1)
		go func(from, to int) {
			defer wg.Done()
			judge(from, to)
		}(from, to)
		from = to
	}
	wg.Wait()
	return judged
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(a, b int) bool {
		x, y := fs[a], fs[b]
		if x.File != y.File {
			return x.File < y.File
		}
		if x.Line != y.Line {
			return x.Line < y.Line
		}
		if x.Col != y.Col {
			return x.Col < y.Col
		}
		if x.Rule != y.Rule {
			return x.Rule < y.Rule
		}
		return x.Message < y.Message
	})
}

// dedupe drops repeated findings of one rule at one position.
func dedupe(fs []Finding) []Finding {
	out := fs[:0]
	for i, f := range fs {
		if i > 0 {
			p := fs[i-1]
			if p.File == f.File && p.Line == f.Line && p.Col == f.Col && p.Rule == f.Rule {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// fingerprint sets each finding's Fingerprint from its rule, file, function and statement
// text plus its rank among findings sharing all four, so that moving code up or down a file
// keeps it, while editing the statement changes it.
func fingerprint(fs []Finding) {
	seen := make(map[string]int, len(fs))
	var buf []byte
	for i := range fs {
		f := &fs[i]
		// The hashed text is rule, file, function, statement and rank, NUL-separated.
		buf = append(buf[:0], f.Rule...)
		buf = append(append(buf, 0), f.File...)
		buf = append(append(buf, 0), f.Function...)
		buf = append(append(buf, 0), f.Statement...)
		n := seen[string(buf)]
		seen[string(buf)] = n + 1
		buf = strconv.AppendInt(append(buf, 0), int64(n), 10)
		sum := sha256.Sum256(buf)
		f.Fingerprint = hex.EncodeToString(sum[:8])
	}
}

// listSources expands paths (relative to root) into sorted, slash-separated source files.
func listSources(root string, paths []string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for _, p := range paths {
		rel := path.Clean(filepath.ToSlash(p))
		if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("audit: path %q must be relative to the tree and inside it", p)
		}
		full := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Stat(full)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		if !fi.IsDir() {
			if !seen[rel] {
				seen[rel] = true
				files = append(files, rel)
			}
			continue
		}
		err = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !isSource(d.Name()) {
				return nil
			}
			r, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			r = filepath.ToSlash(r)
			if !seen[r] {
				seen[r] = true
				files = append(files, r)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("audit: walk %s: %w", rel, err)
		}
	}
	sort.Strings(files)
	return files, nil
}
