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
	return &cobra.Command{
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

A case gives the tool (name, effect, reversibility, tags), the provenance of
its arguments (JSON pointer → origins: user, user-mentioned, constant,
inferred, db, tool:<name>), approved: (a person approved the call), tier: (a risk tier)
and expect: (the verdict it should get). Prints one line per case: the
verdict, the rule and the reason.
Exit codes: 0 every expectation holds, 1 some case got another verdict,
2 bad file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pt, err := flow.LoadPolicyTest(args[0])
			if err != nil {
				return loadError(s, err)
			}
			gate := pt.Policy.Policy()
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
			}
			_ = tw.Flush()
			if len(failed) > 0 {
				return &exitError{code: exitRunFailed, err: fmt.Errorf("%d of %d %s got another verdict than expected: %s",
					len(failed), len(pt.Cases), pluralize(len(pt.Cases), "case", "cases"), strings.Join(failed, ", "))}
			}
			return nil
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
