package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
)

// ConnectTimeout bounds starting a server, the MCP handshake and listing
// its tools.
const ConnectTimeout = 30 * time.Second

// Server is a connection to one MCP server and its tools. It is safe for
// concurrent use.
type Server struct {
	decl    *flow.MCPDecl
	client  *sdk.Client
	timeout time.Duration
	tools   []tool.Tool

	mu      sync.Mutex
	session *sdk.ClientSession
	stderr  *tail // the running program's stderr (command servers)
	closed  bool
}

// Connect starts or dials the server decl describes, lists its tools and
// wraps them. A tool decl declares that the server does not offer is an
// error located at the declaration.
func Connect(ctx context.Context, decl *flow.MCPDecl) (*Server, error) {
	s := &Server{decl: decl, timeout: decl.Timeout,
		client: sdk.NewClient(&sdk.Implementation{Name: "rein"}, nil)}
	if s.timeout <= 0 {
		s.timeout = flow.DefaultToolTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	cs, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.list(ctx, cs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Tools returns the server's tools, sorted by name.
func (s *Server) Tools() []tool.Tool { return s.tools }

// Close ends the session (a command server's stdin is closed, and the
// program is stopped if it does not exit).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.session == nil {
		return nil
	}
	err := s.session.Close()
	s.session = nil
	return err
}

// where locates the server's declaration in messages.
func (s *Server) where() string {
	return fmt.Sprintf("%s:%d:%d: mcp server %s", s.decl.File, s.decl.Pos.Line, s.decl.Pos.Col, s.decl.Name)
}

// connect starts a session and keeps it.
func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	var t sdk.Transport
	var stderr *tail
	if s.decl.URL != "" {
		t = &sdk.StreamableClientTransport{Endpoint: s.decl.URL, DisableStandaloneSSE: true}
	} else {
		cmd, tl := s.command()
		t, stderr = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, tl
	}
	cs, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fault.BusinessErr(fmt.Errorf("%s: cannot connect: %v%s", s.where(), err, stderr.say())) //nolint:errorlint // the SDK's error is text: the call fails as business
	}
	s.mu.Lock()
	s.session, s.stderr = cs, stderr
	s.mu.Unlock()
	return cs, nil
}

// command is the server program, in the rein.yaml's folder with an
// explicit environment, its stderr kept for messages.
func (s *Server) command() (*osexec.Cmd, *tail) {
	prog := s.decl.Command[0]
	if strings.ContainsRune(prog, filepath.Separator) && !filepath.IsAbs(prog) {
		prog = filepath.Join(s.decl.Dir, prog)
	}
	cmd := osexec.Command(prog, s.decl.Command[1:]...)
	cmd.Dir = s.decl.Dir
	cmd.Env = exec.Environ(s.decl.Dir, s.decl.PassEnv, s.decl.Env)
	tl := &tail{red: redact.FromEnv(cmd.Env)}
	cmd.Stderr = tl
	return cmd, tl
}

// list wraps the server's tools.
func (s *Server) list(ctx context.Context, cs *sdk.ClientSession) error {
	offered := map[string]bool{}
	for rt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fault.BusinessErr(fmt.Errorf("%s: cannot list its tools: %v", s.where(), err)) //nolint:errorlint // the SDK's error is text: the call fails as business
		}
		t, err := s.wrap(rt)
		if err != nil {
			return err
		}
		offered[rt.Name] = true
		s.tools = append(s.tools, t)
	}
	slices.SortFunc(s.tools, func(a, b tool.Tool) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
	for name, d := range s.decl.Tools {
		if !offered[name] {
			names := make([]string, 0, len(offered))
			for n := range offered {
				names = append(names, n)
			}
			slices.Sort(names)
			return fmt.Errorf("%s:%d:%d: mcp server %s declares tool %s, which the server does not offer (it offers: %s)",
				s.decl.File, d.Pos.Line, d.Pos.Col, s.decl.Name, name, strings.Join(names, ", "))
		}
	}
	return nil
}

// wrap is the tool.Tool of one server tool.
func (s *Server) wrap(rt *sdk.Tool) (tool.Tool, error) {
	spec := tool.Spec{Name: s.decl.Name + "." + rt.Name, Description: rt.Description, Effect: tool.EffectExternal}
	annotate(&spec, rt.Annotations)
	if d, ok := s.decl.Tools[rt.Name]; ok {
		d.ApplyTo(&spec)
	}
	var err error
	if spec.InputSchema, err = schemaJSON(rt.InputSchema); err != nil {
		return nil, fmt.Errorf("%s: tool %s: input schema: %w", s.where(), rt.Name, err)
	}
	if spec.OutputSchema, err = schemaJSON(rt.OutputSchema); err != nil {
		return nil, fmt.Errorf("%s: tool %s: output schema: %w", s.where(), rt.Name, err)
	}
	return &remoteTool{srv: s, remote: rt.Name, spec: spec}, nil
}

func schemaJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// current returns the live session, starting a new one when the last
// ended.
func (s *Server) current(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	cs, closed := s.session, s.closed
	s.mu.Unlock()
	if closed {
		return nil, fault.BusinessErr(fmt.Errorf("mcp server %s: the connection is closed", s.decl.Name))
	}
	if cs != nil {
		return cs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	return s.connect(ctx)
}

// lost forgets cs after it ended, so the next call connects again, and
// returns what the server wrote to stderr last. Closing the session waits
// for a command server's exit, and so for the last of its stderr.
func (s *Server) lost(cs *sdk.ClientSession) string {
	s.mu.Lock()
	mine, tl := s.session == cs, s.stderr
	if mine {
		s.session = nil
	}
	s.mu.Unlock()
	cs.Close()
	if !mine {
		return ""
	}
	return tl.say()
}

// tail keeps the last bytes a server wrote to stderr.
type tail struct {
	mu  sync.Mutex
	b   []byte
	red *redact.Redactor
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-tailBytes:]...)
	}
	return len(p), nil
}

// say is "; it wrote to stderr: …" or "".
func (t *tail) say() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; it wrote to stderr: " + t.red.String(s)
}

var _ io.Writer = (*tail)(nil)

// isGone reports whether err says the session ended.
func isGone(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
