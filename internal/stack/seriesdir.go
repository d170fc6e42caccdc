package stack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/series"
)

// retiredRE is the comment line of the series file that lists retired IDs: IDs of
// patches that were deleted, which are never given to a new patch.
//
//	# retired: 0004 0011
var retiredRE = lazyregexp.New(`^#\s*retired:\s*(.*)$`)

var patchNameRE = lazyregexp.New(`^([0-9]{4})-([a-z0-9]+(?:-[a-z0-9]+)*)\.patch$`)

// seriesDir is what a series directory holds, as far as export and import care.
type seriesDir struct {
	dir     string
	exists  bool     // the series file exists
	header  []string // comment lines before the first entry (the retired line excluded)
	names   []string // entries, in order
	retired map[int]bool
	files   map[string][]byte // every *.patch in the directory
	byID    map[int]string    // ID -> file name, from entries and files
}

// readSeriesDir reads dir as export, import and rebase see it. A directory that does not
// exist is an empty one (export and import create it). Every file is read through
// series.PatchDir: regular files only, no links, each bounded, and all of them together
// at most series.MaxImportSize.
func readSeriesDir(ctx context.Context, dir string) (*seriesDir, error) {
	pd, err := series.OpenPatchDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &seriesDir{dir: dir, retired: map[int]bool{}, files: map[string][]byte{}, byID: map[int]string{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read series directory: %w", err)
	}
	defer pd.Close()
	return readPatchDir(ctx, pd)
}

// readPatchDir is readSeriesDir on an open directory.
func readPatchDir(ctx context.Context, pd *series.PatchDir) (*seriesDir, error) {
	dir := pd.Name()
	sd := &seriesDir{dir: dir, retired: map[int]bool{}, files: map[string][]byte{}, byID: map[int]string{}}
	entries, err := pd.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("read series directory %s: %w", dir, err)
	}
	var total int64
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".patch") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", dir, err)
		}
		data, err := pd.ReadFile(e.Name(), series.MaxPatchSize)
		if err != nil {
			return nil, err
		}
		if total += int64(len(data)); total > series.MaxImportSize {
			return nil, fmt.Errorf("read %s: its *.patch files hold more than %d MiB together; refusing to read more", dir, series.MaxImportSize>>20)
		}
		sd.files[e.Name()] = data
		if id, ok := patchID(e.Name()); ok {
			sd.byID[id] = e.Name()
		}
	}
	order, err := pd.ReadFile(series.OrderFile, series.MaxOrderSize)
	if errors.Is(err, fs.ErrNotExist) {
		return sd, nil
	}
	if err != nil {
		return nil, err
	}
	sd.exists = true
	inHeader := true
	for n, line := range strings.Split(string(order), "\n") {
		text := strings.TrimSpace(line)
		if m := retiredRE().FindStringSubmatch(text); m != nil {
			for _, f := range strings.Fields(m[1]) {
				id, err := strconv.Atoi(f)
				if err != nil || len(f) != 4 {
					return nil, fmt.Errorf("%s:%d: retired ID %q: want four digits", filepath.Join(dir, series.OrderFile), n+1, f)
				}
				sd.retired[id] = true
			}
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			if inHeader && strings.HasPrefix(text, "#") {
				sd.header = append(sd.header, text)
			}
			continue
		}
		inHeader = false
		sd.names = append(sd.names, text)
		if id, ok := patchID(text); ok {
			sd.byID[id] = text
		}
	}
	return sd, nil
}

func patchID(name string) (int, bool) {
	m := patchNameRE().FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	id, _ := strconv.Atoi(m[1])
	return id, true
}

// maxID is the largest ID the directory knows: listed, present as a file, or retired.
func (sd *seriesDir) maxID() int {
	m := 0
	for id := range sd.byID {
		m = max(m, id)
	}
	for id := range sd.retired {
		m = max(m, id)
	}
	return m
}

// orderFile renders the series file: the header comments, the entries, the retired list.
func orderFile(header, names []string, retired map[int]bool) []byte {
	var b strings.Builder
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	if len(retired) > 0 {
		ids := make([]int, 0, len(retired))
		for id := range retired {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		b.WriteString("# retired:")
		for _, id := range ids {
			fmt.Fprintf(&b, " %04d", id)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// defaultHeader heads a series file export creates from nothing.
var defaultHeader = []string{
	"# Patch series, in apply order. One NNNN-slug.patch per line.",
	"# NNNN is a permanent ID: never renumber or reuse one; reorder by moving lines.",
}
