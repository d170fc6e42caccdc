package upstream

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// Tag is an upstream release tag.
type Tag struct {
	Name   string `json:"name"`
	Commit string `json:"commit"`
}

var releaseRE = lazyregexp.New(`^v(\d{1,6})\.(\d{1,6})\.(\d{1,6})$`)

// releaseVersion parses "v2.9.1"; ok is false for anything else (release candidates,
// ciflow/ tags and the like are not releases).
func releaseVersion(tag string) ([3]int, bool) {
	m := releaseRE().FindStringSubmatch(tag)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// NewerTags lists the release tags (vX.Y.Z) of url newer than since, oldest first, with
// one git ls-remote. since must be a release tag itself.
func NewerTags(ctx context.Context, g *gitcli.Git, url, since string) ([]Tag, error) {
	if err := gitcli.CheckURL(url); err != nil {
		return nil, err
	}
	sv, ok := releaseVersion(since)
	if !ok {
		return nil, fmt.Errorf("upstream tags: pinned tag %q is not a release tag vX.Y.Z", since)
	}
	if g == nil {
		g = &gitcli.Git{}
	}
	g, clean := g.WithCredentials(url)
	refs, err := g.LsRemote(ctx, clean, "refs/tags/v*")
	if err != nil {
		return nil, fmt.Errorf("upstream tags of %s: %w", gitcli.RedactURL(url), err)
	}
	commits := map[string]string{}
	for _, r := range refs {
		name := strings.TrimPrefix(r.Name, "refs/tags/")
		if peeled, ok := strings.CutSuffix(name, "^{}"); ok {
			commits[peeled] = r.SHA // the peeled commit wins over the tag object
			continue
		}
		if _, seen := commits[name]; !seen {
			commits[name] = r.SHA
		}
	}
	var tags []Tag
	for name, sha := range commits {
		if v, ok := releaseVersion(name); ok && less(sv, v) {
			tags = append(tags, Tag{Name: name, Commit: sha})
		}
	}
	sort.Slice(tags, func(i, j int) bool {
		a, _ := releaseVersion(tags[i].Name)
		b, _ := releaseVersion(tags[j].Name)
		return less(a, b)
	})
	return tags, nil
}
