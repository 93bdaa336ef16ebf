package sched

import (
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
)

// Budget counts what a run spends against its flow's limits:
// max_iterations (step executions: each for_each item and repeat round
// counts one), budgets.max_llm_calls and budgets.max_tokens. Its methods
// are safe for concurrent use (a driver's workers charge it as they go);
// a charge that crosses a limit returns a budget-class error
// (fault.BudgetErr) naming it, which stops the run (StopsRun). Budget is
// apart from Machine so that the machine can be copied; it must not be.
type Budget struct {
	f                                         *flow.Flow
	iterations, llmCalls, tokensIn, tokensOut atomic.Int64
}

// Spent is what a run consumed.
type Spent struct {
	Iterations, LLMCalls, TokensIn, TokensOut int
}

// Reset makes b the budget of a run of f that spent nothing.
func (b *Budget) Reset(f *flow.Flow) {
	b.f = f
	b.iterations.Store(0)
	b.llmCalls.Store(0)
	b.tokensIn.Store(0)
	b.tokensOut.Store(0)
}

// Restore adds what a run's earlier processes spent (a resume).
func (b *Budget) Restore(s Spent) {
	b.iterations.Add(int64(s.Iterations))
	b.llmCalls.Add(int64(s.LLMCalls))
	b.tokensIn.Add(int64(s.TokensIn))
	b.tokensOut.Add(int64(s.TokensOut))
}

// Spent is what the run consumed so far.
func (b *Budget) Spent() Spent {
	return Spent{Iterations: int(b.iterations.Load()), LLMCalls: int(b.llmCalls.Load()),
		TokensIn: int(b.tokensIn.Load()), TokensOut: int(b.tokensOut.Load())}
}

// Iteration charges one step execution to max_iterations.
func (b *Budget) Iteration() error {
	n := b.iterations.Add(1)
	if limit := b.f.MaxIterations; int(n) > limit {
		return fault.BudgetErr("max_iterations", "the run would execute more than max_iterations=%d steps", limit)
	}
	return nil
}

// LLMCall charges one model call to budgets.max_llm_calls.
func (b *Budget) LLMCall() error {
	n := b.llmCalls.Add(1)
	if limit := b.f.Budgets.MaxLLMCalls; limit > 0 && int(n) > limit {
		return fault.BudgetErr("max_llm_calls", "the run would make more than max_llm_calls=%d model calls", limit)
	}
	return nil
}

// Tokens charges a model call's tokens to budgets.max_tokens.
func (b *Budget) Tokens(in, out int) error {
	tin := b.tokensIn.Add(int64(in))
	tout := b.tokensOut.Add(int64(out))
	if limit := b.f.Budgets.MaxTokens; limit > 0 && int(tin+tout) > limit {
		return fault.BudgetErr("max_tokens", "the run used %d tokens, more than max_tokens=%d", tin+tout, limit)
	}
	return nil
}

// Timeout is the run's wall-time limit (budgets.timeout; 0: none) and
// the error a run that crosses it fails with. The driver enforces it with
// its clock (a context deadline, a workflow timer).
func (b *Budget) Timeout() (time.Duration, error) {
	t := b.f.Budgets.Timeout
	if t <= 0 {
		return 0, nil
	}
	return t, fault.BudgetErr("timeout", "the run ran past its budget timeout of %s", t)
}
