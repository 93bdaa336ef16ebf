package cassette

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// Player is a model.Model that answers from a cassette. It is safe for
// concurrent use.
type Player struct {
	name      string
	exchanges []Exchange       // never modified after NewPlayer
	byKey     map[string][]int // key → indexes into exchanges, in order
	byStep    map[string]int   // step → exchanges recorded for it

	mu   sync.Mutex
	next map[string]int // key → how many of byKey[key] were replayed
}

var _ model.Model = (*Player)(nil)

// Replay reads the cassette at path and returns a model answering from it
// (a *Player). Errors are those of Read.
func Replay(path string) (model.Model, error) {
	c, err := Read(path)
	if err != nil {
		return nil, err
	}
	return NewPlayer(c, path), nil
}

// NewPlayer returns a Player answering from c; name is the cassette's name
// in messages. c must not be modified afterwards.
func NewPlayer(c *Cassette, name string) *Player {
	p := &Player{name: name, exchanges: c.Exchanges, byKey: map[string][]int{}, byStep: map[string]int{}, next: map[string]int{}}
	for i, x := range c.Exchanges {
		p.byKey[x.Key] = append(p.byKey[x.Key], i)
		p.byStep[x.Request.Step]++
	}
	return p
}

// Generate answers req with the next unreplayed exchange whose key is
// Key(req): its response, and its error (with the recorded class and
// message) when one was recorded. A request the cassette does not hold, or
// holds fewer times than asked, is a business error naming the cassette,
// the step and the start of the prompt. A ctx already done is returned as
// its error without consuming an exchange. The response's text goes to
// ctx's model.DeltaFunc, when there is one, as one delta.
func (p *Player) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		return nil, fault.Errorf(fault.Business, "cassette %s: nil request", p.name)
	}
	if err := ctx.Err(); err != nil {
		if err == context.DeadlineExceeded {
			return nil, fault.TransientErr(fmt.Errorf("cassette %s: step %q: %w", p.name, req.StepID, err))
		}
		return nil, fmt.Errorf("cassette %s: step %q: %w", p.name, req.StepID, err)
	}
	key := Key(req)
	p.mu.Lock()
	idx := p.byKey[key]
	n := p.next[key]
	if n < len(idx) {
		p.next[key] = n + 1
	}
	p.mu.Unlock()
	if n >= len(idx) {
		return nil, p.miss(req, len(idx))
	}
	x := &p.exchanges[idx[n]]
	var resp *model.Response
	if x.Response != nil {
		resp = &model.Response{Text: x.Response.Text, ToolCalls: slices.Clone(x.Response.ToolCalls), Usage: x.Response.Usage, Model: x.Response.Model}
		// the whole reply as one delta: the streaming path, offline.
		model.SendText(ctx, req, resp.Text)
	}
	if x.Error != nil {
		return resp, fault.Errorf(x.Error.Class, "%s", x.Error.Message)
	}
	return resp, nil
}

func (p *Player) miss(req *model.Request, held int) error {
	prompt := strconv.Quote(cut(req.Prompt(), 60))
	var why string
	switch steps := p.byStep[req.StepID]; {
	case held > 0:
		why = fmt.Sprintf("; it holds this request %d time(s), all replayed already", held)
	case steps > 0:
		why = fmt.Sprintf("; it holds %d exchange(s) for this step with another model, decision, prompt, schema or tools", steps)
	}
	return fault.Errorf(fault.Business, "cassette %s holds no exchange for step %s (prompt %s)%s: %w", p.name, strconv.Quote(req.StepID), prompt, why, ErrRecordAgain)
}

// Unused returns how many exchanges have not been replayed.
func (p *Player) Unused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.exchanges)
	for _, used := range p.next {
		n -= used
	}
	return n
}
