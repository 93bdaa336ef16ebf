package http_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// screenshots, when set, is the folder the browser test writes the UI's
// full-page screenshots to (docs/img):
//
//	go test ./server/http -run TestUIInBrowser -screenshots ../../docs/img
var screenshots = flag.String("screenshots", "", "write the UI's screenshots (PNG) to this folder")

// chromium is the browser's path: the test fails under CI=true without
// one (.ci/run installs Debian's chromium) and skips elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: the UI's browser test needs it under CI (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the UI's browser test is skipped")
	return ""
}

// browserCtx starts a headless chromium and returns the context of its
// first tab.
func browserCtx(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs actions in ctx within a minute, failing the test with what.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, pageText(ctx))
	}
}

// pageText is the tab's address and text, to say where a step failed.
func pageText(ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(c, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	if err != nil {
		return "(the page cannot be read: " + err.Error() + ")"
	}
	return text
}

// front makes the tab the active one: a hidden tab gets no animation
// frames, and the actions that wait for one (clicks, keys) would hang.
var front = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	_, err := cdp.Call(ctx, t, cdppage.BringToFront, cdp.Empty{})
	return err
})

// get runs one action that returns a value, within a minute.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// shoot writes a full-page screenshot of the tab to the screenshots
// folder, when one is given.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// recorder notes, in the page, when its event stream opens and the text
// #stream shows after each delta.
const recorder = `window.reinStreamed = ""; window.reinOpen = false;
document.addEventListener("htmx:sseOpen", () => { window.reinOpen = true; });
document.addEventListener("htmx:sseMessage", e => {
  if (e.detail.type === "delta") window.reinStreamed += document.getElementById("stream").textContent;
});`

// The UI end to end in a real browser: log in with a token, open a run
// that waits for approval in one tab and the inbox in another, approve
// by clicking, and watch the run's graph turn green without a reload;
// then approve an agent's refund and see its answer stream into the open
// run page.
func TestUIInBrowser(t *testing.T) {
	ctx := browserCtx(t)
	e := newEnv(t, envOpts{logRequests: os.Getenv("REIN_UI_DEBUG") != "", tokens: true, dirs: []string{"../../examples/refund", "../../examples/support-agent"}})
	alice := e.token("alice", "acme", "run", "approve")
	flowRun := e.start(alice, bigRefund)
	agentRun := e.start(alice, map[string]any{"agent": "support", "task": "I was charged twice for order 1042"})
	if flowRun.Status != "waiting" || agentRun.Status != "waiting" {
		t.Fatalf("runs are %s and %s, want both waiting", flowRun.Status, agentRun.Status)
	}
	u := e.ts.URL

	run(t, ctx, "log in",
		chromedp.Navigate(u+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), alice),
		chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.CSS(`#rows`)),
	)
	if heading := get(t, ctx, "the heading", chromedp.Text(chromedp.CSS(`h1`))); heading != "Runs" {
		t.Fatalf("after login the page is %q", heading)
	}
	run(t, ctx, "the runs list shows both runs",
		chromedp.WaitVisible(chromedp.CSS(`a[href="/runs/`+flowRun.RunID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/runs/`+agentRun.RunID+`"]`)),
	)
	shoot(t, ctx, "ui-runs")

	// tab 1: the flow run's page, marked so that a reload would show
	run(t, ctx, "open the flow run",
		chromedp.Navigate(u+"/runs/"+flowRun.RunID),
		chromedp.WaitReady(chromedp.CSS(`g#step-review.st-waiting`)),
		chromedp.Evaluate[chromedp.Void](`window.reinMark = 1`),
	)
	// tab 2: the inbox, in the same browser (the session cookie)
	inbox, cancel := chromedp.NewContext(ctx)
	defer cancel()
	// the first Do opens the tab, which lives as long as the context it is
	// given: not one with a timeout.
	if err := chromedp.Do(inbox); err != nil {
		t.Fatal(err)
	}
	run(t, inbox, "open the inbox",
		chromedp.Navigate(u+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`#a-review button[value="approve"]`)),
	)
	shoot(t, inbox, "ui-inbox")
	run(t, inbox, "approve the refund",
		front,
		chromedp.SendKeys(chromedp.CSS(`#a-review textarea`), "photo checked"),
		chromedp.Click(chromedp.CSS(`#a-review button[value="approve"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#a-review`)),
	)
	run(t, ctx, "the graph turns green without a reload",
		front,
		chromedp.WaitReady(chromedp.CSS(`g#step-review.st-succeeded`)),
		chromedp.WaitReady(chromedp.CSS(`g#step-refund.st-succeeded`)),
		chromedp.WaitVisible(chromedp.CSS(`#run-status .badge.succeeded`)),
	)
	if !get(t, ctx, "the mark", chromedp.Evaluate[bool](`window.reinMark === 1`)) {
		t.Error("the run page was reloaded: the graph should turn green live")
	}
	if v := e.waitStatus(alice, flowRun.RunID, "succeeded"); v.Approvals[0].Comment != "photo checked" || v.Approvals[0].DecidedBy != "alice" {
		t.Errorf("the decision is recorded as %+v", v.Approvals[0])
	}
	shoot(t, ctx, "ui-run")
	run(t, ctx, "the effects view",
		chromedp.Navigate(u+"/runs/"+flowRun.RunID+"/effects?premise=lookup"),
		chromedp.WaitVisible(chromedp.CSS(`#impact`)),
	)
	shoot(t, ctx, "ui-effects")

	// the agent: its page open, with a recorder (run before the page's
	// scripts) of the stream's opening and of what #stream shows
	run(t, ctx, "open the agent run",
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: recorder})
			return err
		}),
		chromedp.Navigate(u+"/runs/"+agentRun.RunID),
		chromedp.WaitReady(chromedp.CSS(`#stream`)),
	)
	get(t, ctx, "the run page's stream opens", chromedp.Poll[bool](`window.reinOpen === true`, chromedp.WithPollingInterval(50*time.Millisecond)))
	run(t, inbox, "approve the agent's refund",
		front,
		chromedp.Navigate(u+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`button[value="approve"]`)),
		chromedp.Click(chromedp.CSS(`button[value="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`main p.muted`)),
	)
	run(t, ctx, "the agent's run succeeds", front, chromedp.WaitVisible(chromedp.CSS(`#run-status .badge.succeeded`)))
	streamed := get(t, ctx, "what #stream showed", chromedp.Evaluate[string](`window.reinStreamed`))
	transcript := get(t, ctx, "the transcript", chromedp.Text(chromedp.CSS(`.transcript`)))
	const answer = "You were charged twice for order 1042"
	if !strings.Contains(streamed, answer) {
		t.Errorf("the page's stream showed %q, want the answer as the model wrote it", streamed)
	}
	if !strings.Contains(transcript, answer) || !strings.Contains(transcript, "issue_refund") {
		t.Errorf("the transcript %q lacks the answer or the refund call", transcript)
	}
}
