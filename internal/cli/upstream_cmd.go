package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/upstream"
)

func newUpstreamCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upstream",
		Short: "Ask the upstream repository about its releases",
		Long: `Questions for the upstream repository ([upstream] url, or --url) that need no
checkout. To check the series against an upstream tag or branch, see check --upstream.`,
		Example: `  mpspatch upstream tags`,
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(newUpstreamTagsCmd(d))
	return cmd
}

type upstreamTagsOptions struct {
	url   string
	since string
}

func newUpstreamTagsCmd(d *deps) *cobra.Command {
	opts := &upstreamTagsOptions{}
	cmd := &cobra.Command{
		Use:   "tags",
		Short: "List the upstream release tags newer than the pinned base",
		Long: `List the release tags (vX.Y.Z; release candidates left out) of [upstream] url, or
--url, that are newer than [upstream] tag, or --since, oldest first, one per line: one
git ls-remote, nothing fetched. A nightly job feeds them to check --upstream to learn on
the day of a release which patches need work (see docs/ci.md).`,
		Example: `  mpspatch upstream tags
  mpspatch upstream tags --since v2.8.0 --json
  mpspatch check $(mpspatch upstream tags | sed 's/^/--upstream=/')`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUpstreamTags(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.url, "url", "", "upstream repository (default: config [upstream] url)")
	cmd.Flags().StringVar(&opts.since, "since", "", "list tags newer than this one (default: config [upstream] tag)")
	return cmd
}

type upstreamTagsReport struct {
	URL   string         `json:"url"`
	Since string         `json:"since"`
	Tags  []upstream.Tag `json:"tags"`
}

func runUpstreamTags(ctx context.Context, d *deps, opts *upstreamTagsOptions) error {
	cfg, err := d.config()
	if err != nil {
		return err
	}
	url, since := opts.url, opts.since
	if url == "" {
		url = cfg.Upstream.URL
	}
	if since == "" {
		since = cfg.Upstream.Tag
	}
	tags, err := upstream.NewerTags(ctx, &gitcli.Git{}, url, since)
	if err != nil {
		return upstreamError(err)
	}
	if tags == nil {
		tags = []upstream.Tag{}
	}
	p := d.printer()
	p.Progressf("upstream: %s newer than %s at %s", plural(len(tags), "release tag"), since, gitcli.RedactURL(url))
	rep := upstreamTagsReport{URL: gitcli.RedactURL(url), Since: since, Tags: tags}
	return p.Result(rep, func(w io.Writer) {
		for _, t := range tags {
			fmt.Fprintln(w, t.Name)
		}
	})
}

func newCacheCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Manage the upstream cache that check --upstream fills",
		Long: `check --upstream keeps the commits, trees and touched files it fetched in a cache under
the user cache directory (os.UserCacheDir()/mpspatch), one repository per upstream URL,
so that later runs and other tags cost little.`,
		Example: `  mpspatch cache clean`,
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "clean",
		Short: "Empty the upstream cache",
		Long: `Remove everything check --upstream cached under the user cache directory
(os.UserCacheDir()/mpspatch: ~/.cache/mpspatch on Linux, ~/Library/Caches/mpspatch on
macOS). A run that is using the cache finishes first; the next run fetches again.`,
		Example: `  mpspatch cache clean`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCacheClean(d)
		},
	})
	return cmd
}

type cacheCleanReport struct {
	Dir   string `json:"dir"`
	Freed int64  `json:"freed_bytes"`
}

func runCacheClean(d *deps) error {
	dir, err := upstream.DefaultDir()
	if err != nil {
		return err
	}
	freed, err := (&upstream.Cache{Dir: dir}).Clean()
	if err != nil {
		return err
	}
	p := d.printer()
	return p.Result(cacheCleanReport{Dir: dir, Freed: freed}, func(w io.Writer) {
		fmt.Fprintf(w, "emptied %s (%.1f MiB freed)\n", dir, float64(freed)/(1<<20))
	})
}
