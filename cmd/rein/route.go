package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/decide"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
)

// routeFlags are the flags of rein route.
type routeFlags struct {
	routes, model, script, config, output, step string
	metadata                                    map[string]string
}

func newRouteCmd(s *streams) *cobra.Command {
	f := &routeFlags{}
	cmd := &cobra.Command{
		Use:   `route "request text"`,
		Short: "Route a request with a routes file: rules first, then the semantic router",
		Long: `Route one request with a routes file (--routes, default routes.yaml): its rules
are tried in order and the first that matches decides, with no model call.
Otherwise the semantic router asks a model to choose one of the routes and
say why; a route outside the set is rejected (one corrective request, then
an error), never guessed. A file with fallback: takes that route instead.

The model is --model NAME, else the file's model:. --script FILE answers it
with the scripted model offline (replies {step: route, decision: route,
route: NAME, reason: TEXT}); otherwise NAME is a model of rein.yaml models:
(--config FILE, else rein.yaml beside the routes file, else in the current
directory) or provider/model (openai/gpt-4o-mini), with its API key from the
environment.

Prints the route, how it was chosen and why (--output json: {"route",
"source": "rule"|"semantic"|"fallback", "reason", "rule"}).
Exit codes: 0 routed, 1 no route (no rule matched and there is no semantic
router, or the model's choice was rejected or failed), 2 bad routes file,
model configuration or usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, s, args[0]) },
	}
	cmd.Flags().StringVar(&f.routes, "routes", "routes.yaml", "routes file")
	cmd.Flags().StringVar(&f.model, "model", "", "model of the semantic router: a rein.yaml models: name or provider/model (default: the routes file's model:)")
	cmd.Flags().StringVar(&f.script, "script", "", "scripted-model script answering the semantic router offline")
	cmd.Flags().StringVar(&f.step, "step", "route", "the step id the semantic router's model request carries (what a script's step: matches, e.g. a flow's route step)")
	cmd.Flags().StringVar(&f.config, "config", "", "rein.yaml configuring models (default: rein.yaml beside the routes file, else in the current directory)")
	cmd.Flags().StringToStringVar(&f.metadata, "metadata", nil, "request metadata for rule expressions, as key=value (repeatable)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "result format: text or json")
	return cmd
}

func (f *routeFlags) run(cmd *cobra.Command, s *streams, text string) error {
	if err := checkFormat("--output", f.output); err != nil {
		return err
	}
	file, err := decide.ParseRoutes(f.routes)
	if err != nil {
		return routesFileError(s, err)
	}
	req := decide.RouteRequest{Text: text}
	if len(f.metadata) > 0 {
		req.Metadata = make(map[string]any, len(f.metadata))
		for k, v := range f.metadata {
			req.Metadata[k] = v
		}
	}
	// Rules first, and a rule's decision needs no model: the semantic
	// router is only set up (and its model only required) when no rule
	// matches.
	rules, err := file.Router(nil)
	if err != nil {
		return routesFileError(s, err)
	}
	res, matched, err := rules.Match(cmd.Context(), req)
	if err == nil && matched {
		return f.print(s, res)
	}
	if err == nil {
		var sem decide.Semantic
		if sem, err = f.semantic(s, file); err != nil {
			return err
		}
		var router *decide.Router
		if router, err = file.Router(sem); err != nil {
			return routesFileError(s, err)
		}
		res, err = router.Route(cmd.Context(), req)
	}
	if err != nil {
		if errors.Is(err, decide.ErrNoMatch) {
			err = fmt.Errorf("no rule of %s matched %q and there is no semantic router: set model: in the file, pass --model NAME or --script FILE, or name a fallback: route", f.routes, text)
		}
		if f.output == "json" {
			if werr := encodeJSON(s, map[string]any{"route": nil, "error": map[string]any{"class": fault.ClassOf(err), "message": err.Error()}}); werr != nil {
				return werr
			}
		}
		code := exitRunFailed
		if cmd.Context().Err() != nil {
			code = exitInterrupted
		}
		return &exitError{code: code, err: err}
	}
	return f.print(s, res)
}

func (f *routeFlags) print(s *streams, res decide.RouteResult) error {
	if f.output == "json" {
		return encodeJSON(s, res)
	}
	switch {
	case res.Rule != nil:
		fmt.Fprintf(s.out, "%s (rule: %s %q)\n", res.Route, res.Rule.Kind, res.Rule.Pattern)
	default:
		fmt.Fprintf(s.out, "%s (%s: %s)\n", res.Route, res.Source, res.Reason)
	}
	return nil
}

// semantic returns the semantic router for file: the model --model or the
// file's model: names (nil when neither does, nor --script is given).
func (f *routeFlags) semantic(s *streams, file *decide.Routes) (decide.Semantic, error) {
	name := f.model
	if name == "" {
		name = file.Model
	}
	if name == "" && f.script == "" {
		return nil, nil
	}
	if file.Fallback != "" {
		return nil, usageErr("%s names fallback route %q, which excludes a semantic router: drop --model/--script, or the fallback", f.routes, file.Fallback)
	}
	cfgPath, err := findConfig(f.config, filepath.Dir(f.routes))
	if err != nil {
		return nil, err
	}
	tb, err := project.LoadConfig(cfgPath, &project.LoadOptions{Script: f.script})
	if err != nil {
		return nil, loadError(s, err)
	}
	if tb.Script != nil {
		// The script answers every name; a reply may filter on it (model:).
		return decide.ModelSemantic(tb.Script, name, f.step), nil
	}
	m, err := tb.Model(name)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("semantic router: %w", err)}
	}
	return decide.ModelSemantic(m, "", f.step), nil
}

// routesFileError prints a routes file's located problems and returns the
// usage exit.
func routesFileError(s *streams, err error) error {
	var re *decide.RoutesError
	if !errors.As(err, &re) {
		return usageErr("%v", err)
	}
	for _, p := range re.Problems {
		fmt.Fprintln(s.err, p.String())
	}
	n := len(re.Problems)
	return &exitError{code: exitUsage, err: fmt.Errorf("%d %s in the routes file; nothing was routed", n, pluralize(n, "problem", "problems"))}
}
