package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/flow"
)

func newPolicyCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with the policy gate's rules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return &exitError{code: exitUsage}
		},
	}
	cmd.AddCommand(newPolicyTestCmd(s))
	return cmd
}

func newPolicyTestCmd(s *streams) *cobra.Command {
	var from []string
	cmd := &cobra.Command{
		Use:   "test FILE",
		Short: "Decide the cases of a policy test file and check the expected verdicts",
		Long: `Run the policy gate's rules against cases, without running anything. FILE
holds defaults: (true: the default rules first), rules: (as in rein.yaml
policy: rules) and cases:, each an invocation to decide:

  defaults: true
  rules:
    - {name: no-model-refunds, tools: [refund], provenance: [inferred], verdict: block}
  cases:
    - name: a refund the model computed
      tool: {name: refund, effect: external, tags: [money]}
      provenance: {/amount: [inferred], /customer: [db]}
      expect: block

from: (a path, or a list, relative to FILE; or --from PATH, relative to
the working folder) decides the cases with a real project's rules instead
of retyping them: a folder's rein.yaml policy: joined with its flow.yaml's
policy:, as a run joins them, or one such file; the file's own rules
(if any) join them. A case may then name a tool the rein.yaml declares
(tool: send_refund) and get its declared effect, reversibility and tags.

A case gives the tool (name, effect, reversibility, tags), the provenance of
its arguments (JSON pointer → origins: user, user-mentioned, constant,
inferred, invalidated, db, tool:<name>), args: (the call's arguments, which a rule's
when: reads), approved: (a person approved the call), tier: (a risk tier)
and expect: (the verdict it should get). Prints one line per case: the
verdict, the rule and the reason, then a line for each log-only rule
(enforce: false) that held on it.
Exit codes: 0 every expectation holds, 1 some case got another verdict,
2 bad file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pt, err := flow.LoadPolicyTest(args[0])
			if err != nil {
				return loadError(s, err)
			}
			for _, p := range from {
				if err := pt.AddSource(p); err != nil {
					return &exitError{code: exitUsage, err: fmt.Errorf("--from %s: %w", p, err)}
				}
			}
			if bad := pt.Unresolved(); len(bad) > 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("%s: these cases name a tool that no from: source declares; declare it in the case (tool: {name: ..., effect: ...}) or add its rein.yaml with from: or --from: %s",
					args[0], strings.Join(bad, ", "))}
			}
			gate := pt.Gate()
			tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CASE\tTOOL\tVERDICT\tRULE\tREASON")
			var failed []string
			for i := range pt.Cases {
				c := &pt.Cases[i]
				d, err := gate.Check(cmd.Context(), &c.Invocation)
				if err != nil {
					return fmt.Errorf("case %s: %w", c.Name, err)
				}
				verdict := string(d.Verdict)
				if c.Expect != "" && c.Expect != d.Verdict {
					verdict += " (want " + string(c.Expect) + ")"
					failed = append(failed, c.Name)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Invocation.Tool.Name, verdict, orDash(d.Rule), orDash(d.Reason))
				for _, w := range d.LogOnly {
					fmt.Fprintf(tw, "%s\t%s\tlog-only %s (not applied)\t%s\t%s\n", c.Name, c.Invocation.Tool.Name, w.Verdict, w.Rule, orDash(w.Reason))
				}
			}
			_ = tw.Flush()
			if len(failed) > 0 {
				return &exitError{code: exitRunFailed, err: fmt.Errorf("%d of %d %s got another verdict than expected: %s",
					len(failed), len(pt.Cases), pluralize(len(pt.Cases), "case", "cases"), strings.Join(failed, ", "))}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&from, "from", nil, "decide with the rules of this project folder, rein.yaml or flow.yaml besides the file's own (repeatable)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
