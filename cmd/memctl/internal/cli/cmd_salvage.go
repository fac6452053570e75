package cli

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/embedded"
	"github.com/stratamem/strata/vectorstore/chromem"
)

const salvageLong = `Recover an embedded store whose log is damaged.

When the embedded store refuses to open with CORRUPT (a damaged or truncated
records.log, or a missing one next to meta.json), salvage reads every intact
frame of the log, keeps the damaged log beside it as
records.log.damaged-<time> (nothing is deleted), and writes a clean log of
the records it could read. It reports how many records it kept and how many
bytes were lost. A store that opens as it is is left alone.

It needs the store closed: stop the agents using it first. Without --yes it
asks before writing; --dry-run only reports. It works on embedded stores (a
directory or a chromem:// URL); server backends have their own recovery.`

type salvageFlags struct {
	dryRun, yes bool
}

func (a *app) salvageCmd() *cobra.Command {
	var f salvageFlags
	cmd := &cobra.Command{
		Use:   "salvage",
		Short: "Recover the intact records of a damaged embedded store",
		Long:  salvageLong,
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runSalvage(cmd.Context(), &f)
		},
	}
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "report what salvage would keep and lose, write nothing")
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// salvageTarget is the collection directory and name of an embedded store
// reference.
func salvageTarget(ref storeRef) (dir, name string, err error) {
	if ref.Dir != "" {
		return filepath.Join(ref.Dir, "records"), embedded.Collection, nil
	}
	if ref.Scheme != "chromem" {
		return "", "", usageErrorf("salvage works on embedded stores only, not %s", ref)
	}
	u, err := url.Parse(ref.URL)
	if err != nil {
		return "", "", usageErrorf("store URL: %v", err)
	}
	name = u.Query().Get("collection")
	if name == "" {
		name = "memories"
	}
	return u.Path, name, nil
}

func (a *app) runSalvage(ctx context.Context, f *salvageFlags) error {
	ref, err := resolveStore(a.flags.store, a.cfg, a.cfgPath)
	if err != nil {
		return err
	}
	dir, name, err := salvageTarget(ref)
	if err != nil {
		return err
	}
	// Look first: a healthy store is left alone, and the operator sees
	// what would be lost before anything is written.
	rep, err := chromem.Salvage(ctx, dir, name, chromem.SalvageOptions{DryRun: true})
	if err != nil {
		return fmt.Errorf("salvage %s: %w", ref, err)
	}
	if rep.Healthy || f.dryRun {
		return a.printSalvage(rep)
	}
	if !f.yes {
		question := fmt.Sprintf("%s\nKeep %d records, set the damaged log aside and write a clean one?", esc(rep.Problem), rep.Records)
		refused := usageErrorf("refusing to rewrite the log without --yes (stdin is not a terminal to confirm on); --dry-run reports only")
		if err := a.confirm(question, refused, "nothing written"); err != nil {
			return err
		}
	}
	rep, err = chromem.Salvage(ctx, dir, name, chromem.SalvageOptions{})
	if err != nil {
		return fmt.Errorf("salvage %s: %w", ref, err)
	}
	return a.printSalvage(rep)
}

func (a *app) printSalvage(rep chromem.SalvageReport) error {
	if a.flags.json {
		return writeJSON(a.io.Out, rep)
	}
	w := a.io.Out
	switch {
	case rep.Healthy:
		fmt.Fprintf(w, "%s: healthy, %d records; nothing to salvage\n", esc(rep.Dir), rep.Records)
		return nil
	case rep.DryRun:
		fmt.Fprintf(w, "%s: %s\nwould keep %d records (%d frames); %d damaged bytes, %d missing bytes\n",
			esc(rep.Dir), esc(rep.Problem), rep.Records, rep.Frames, rep.DamagedBytes, rep.MissingBytes)
		return nil
	}
	fmt.Fprintf(w, "%s: kept %d records (%d frames); %d damaged bytes, %d missing bytes; the damaged log is kept as %s\n",
		esc(rep.Dir), rep.Records, rep.Frames, rep.DamagedBytes, rep.MissingBytes, esc(rep.KeptAs))
	return nil
}
