package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// ArtifactsEnv names the directory the browser test saves its screenshot
// to; unset, it is apollo11-dashboard-artifacts in the temp dir.
const ArtifactsEnv = "APOLLO11_TEST_ARTIFACTS"

// chromium finds a Chromium to drive. It skips the test where there is
// none, except under CI, which installs Debian's chromium (.ci/run):
// there a missing browser is a failure, not a silent skip.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("APOLLO11_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true: the dashboard's browser test must run in CI (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (Debian: apt-get install chromium; or set APOLLO11_CHROMIUM): the dashboard's browser test is skipped here, never in CI")
	return ""
}

// browser starts a headless Chromium fit for a root user with no
// network: no sandbox, no background networking.
func browser(t *testing.T, path string) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, tcancel := context.WithTimeout(ctx, patience.Scale(3*time.Minute))
	return ctx, func() { tcancel(); cancel(); acancel() }
}

// load keeps tasks flowing until stop is closed: echo tasks, a few that
// fail, and the ids of each kind.
type load struct {
	c    *client.Client
	stop chan struct{}
	wg   sync.WaitGroup
}

func (l *load) run(t *testing.T) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			req := client.SubmitRequest{Type: "echo", Args: map[string]string{"n": strconv.Itoa(i)}}
			if i%7 == 0 {
				req = client.SubmitRequest{Type: "fail", MaxAttempts: 1}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := l.c.Submit(ctx, req)
			cancel()
			if err != nil {
				t.Logf("load submit: %v", err)
				return
			}
		}
	}()
}

// The dashboard end to end: the real binary with a token, an executor,
// tasks flowing, a real Chromium. Each page is loaded, each action taken,
// and its effect checked through the wire.
func TestDashboard_Browser(t *testing.T) {
	chrome := chromium(t)
	bin := testbin.Build(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("e2e-dashboard-token\n"), 0o600))
	httpAddr := testbin.FreeAddr(t)
	mc := testbin.StartMaincontrol(t, bin, "--data-dir", filepath.Join(dir, "data"),
		"--token-file", tokenFile, "--http-listen", httpAddr)
	testbin.Start(t, bin, nil, "executor", "--connect", mc.Addr, "--token-file", tokenFile,
		"--id", "ex-e2e", "--slots", "4", "--types", "echo,sleep,fail")

	ctx, cancel := context.WithTimeout(context.Background(), patience.Scale(time.Minute))
	defer cancel()
	c, err := client.Dial(ctx, mc.Addr, client.Options{Token: []byte("e2e-dashboard-token"), Name: "e2e"})
	require.NoError(t, err)
	defer c.Close()
	// A run of three steps sharing a trace id, a task to cancel, a task
	// that fails, and a steady flow of echo tasks.
	var runIDs []uint64
	for i := range 3 {
		s, err := c.Submit(ctx, client.SubmitRequest{Type: "echo", TraceID: "e2e-run", Args: map[string]string{"step": strconv.Itoa(i)}})
		require.NoError(t, err)
		runIDs = append(runIDs, s.ID)
	}
	long, err := c.Submit(ctx, client.SubmitRequest{Type: "sleep", Args: map[string]string{"ms": "600000"}})
	require.NoError(t, err)
	echo, done, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "echo", Args: map[string]string{"msg": "hello <b>dashboard</b>"}})
	require.NoError(t, err)
	require.Equal(t, "succeeded", done.State)
	failed, fdone, err := c.SubmitWait(ctx, client.SubmitRequest{Type: "fail", MaxAttempts: 1})
	require.NoError(t, err)
	require.Equal(t, "failed", fdone.State)
	ld := &load{c: c, stop: make(chan struct{})}
	ld.run(t)
	defer func() { close(ld.stop); ld.wg.Wait() }()

	bctx, bcancel := browser(t, chrome)
	defer bcancel()
	base := "http://" + httpAddr
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(bctx, steps...))
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		require.NoError(t, err)
		return s
	}
	// follow clicks a link or a form's button and waits for the page it
	// leads to: a wait for an element alone could find it on the old one.
	follow := func(sel string) {
		t.Helper()
		from, err := chromedp.Run(bctx, chromedp.Location())
		require.NoError(t, err)
		do(chromedp.Click(css(sel)))
		deadline := time.Now().Add(patience.Scale(20 * time.Second))
		for {
			at, err := chromedp.Run(bctx, chromedp.Location())
			require.NoError(t, err)
			ready, err := chromedp.Run(bctx, chromedp.Evaluate[string]("document.readyState"))
			if err == nil && at != from && ready == "complete" {
				return
			}
			require.True(t, time.Now().Before(deadline), "clicking %s left the page at %s", sel, from)
			time.Sleep(50 * time.Millisecond)
		}
	}
	column := func(sel string) []string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+strconv.Quote(sel)+`)].map(e => e.textContent)`))
		require.NoError(t, err)
		return v
	}

	// Every page asks for the login first; a wrong token is refused.
	do(chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), "not-the-token"), chromedp.Click(css("#login")),
		chromedp.WaitVisible(css("#flash")))
	assert.Contains(t, text("#flash"), "Wrong token")
	do(chromedp.SendKeys(css("#token"), "e2e-dashboard-token"), chromedp.Click(css("#login")),
		chromedp.WaitVisible(css("#counts")))

	// Overview: counts, the executor, and (after two samples) the chart.
	s := text("#executors")
	assert.Contains(t, s, "ex-e2e")
	assert.Contains(t, s, "/ 4")
	deadline := time.Now().Add(patience.Scale(30 * time.Second))
	for {
		do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#counts")))
		if len(column("polyline.end")) > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no throughput chart after 30 s")
		time.Sleep(time.Second)
	}
	succeeded, err := strconv.Atoi(text("#count-succeeded"))
	require.NoError(t, err)
	assert.Positive(t, succeeded)
	shot(t, bctx)

	// Task list: filtered by state through the form, by type, and paged.
	do(chromedp.Navigate(base+"/tasks"), chromedp.WaitVisible(css("#f-state")),
		chromedp.SetValue(css("#f-state"), "failed"))
	follow("#f-apply")
	do(chromedp.WaitVisible(css("#tasks")))
	states := column("#tasks tbody .pill")
	require.NotEmpty(t, states)
	for _, st := range states {
		assert.Equal(t, "failed", st)
	}
	do(chromedp.Navigate(base+"/tasks?type=sleep"), chromedp.WaitVisible(css("#tasks")))
	assert.Equal(t, []string{"sleep"}, column("#tasks tbody tr td:nth-child(3)"))
	do(chromedp.Navigate(base+"/tasks?state=succeeded"), chromedp.WaitVisible(css("#next")))
	page1 := column("#tasks tbody tr td:first-child")
	follow("#next")
	do(chromedp.WaitVisible(css("#tasks")))
	page2 := column("#tasks tbody tr td:first-child")
	require.Len(t, page1, 50)
	require.NotEmpty(t, page2)
	last, _ := strconv.Atoi(page1[len(page1)-1])
	first, _ := strconv.Atoi(page2[0])
	assert.Less(t, first, last, "the next page holds older tasks: %v then %v", page1, page2)

	// Task pages: args and outputs (as text, not markup), and an error.
	do(chromedp.Navigate(base+"/tasks/"+strconv.FormatUint(echo.ID, 10)), chromedp.WaitVisible(css("#outputs")))
	assert.Contains(t, text("#args"), "hello <b>dashboard</b>")
	assert.Contains(t, text("#outputs"), "hello <b>dashboard</b>")
	do(chromedp.WaitVisible(css("#history")))
	assert.Contains(t, text("#history"), "succeeded", "the history shows how the task ended")
	do(chromedp.Navigate(base+"/tasks/"+strconv.FormatUint(failed.ID, 10)), chromedp.WaitVisible(css("#task-error")))
	assert.Equal(t, "failed", text("#state"))

	// Cancel, and its effect through the wire.
	do(chromedp.Navigate(base+"/tasks/"+strconv.FormatUint(long.ID, 10)), chromedp.WaitVisible(css("#cancel")),
		chromedp.Click(css("#cancel")), chromedp.WaitVisible(css("#flash")))
	assert.Equal(t, "cancelled", text("#state"))
	ts, err := c.Query(ctx, long.ID)
	require.NoError(t, err)
	assert.Equal(t, "cancelled", ts.State)

	// Requeue the failed task: the wire shows it was.
	do(chromedp.Navigate(base+"/tasks/"+strconv.FormatUint(failed.ID, 10)), chromedp.WaitVisible(css("#requeue")),
		chromedp.Click(css("#requeue")), chromedp.WaitVisible(css("#flash")))
	ts, err = c.Query(ctx, failed.ID)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), ts.Requeues)

	// Pause a task type from the overview, then resume it.
	typeState := func(name string) client.TypeInfo {
		t.Helper()
		types, err := c.TypeListAll(func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) })
		require.NoError(t, err)
		for _, ti := range types {
			if ti.Name == name {
				return ti
			}
		}
		t.Fatalf("no task type %s in %v", name, types)
		return client.TypeInfo{}
	}
	do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#pause-type")),
		chromedp.SendKeys(css("#pause-type"), "sleep"))
	follow("#pause")
	do(chromedp.WaitVisible(css("#flash")))
	assert.Contains(t, text("#paused"), "sleep")
	assert.True(t, typeState("sleep").Paused)
	follow("#paused .resume")
	do(chromedp.WaitVisible(css("#flash")))
	assert.False(t, typeState("sleep").Paused)

	// Runs: the three steps grouped by their trace id.
	do(chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css("#runs")),
		chromedp.Click(css(`a[href="/runs?trace=e2e-run"]`)), chromedp.WaitVisible(css("#run-tasks")))
	want := make([]string, 0, len(runIDs))
	for i := len(runIDs) - 1; i >= 0; i-- {
		want = append(want, strconv.FormatUint(runIDs[i], 10))
	}
	assert.Equal(t, want, column("#run-tasks tbody tr td:first-child"))

	// Log out: the pages ask for the token again.
	do(chromedp.Click(css(".logout button")), chromedp.WaitVisible(css("#token")),
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#token")))
}

// shot saves a screenshot of the page, the overview under load, as the
// test's artifact.
func shot(t *testing.T, ctx context.Context) {
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "apollo11-dashboard-artifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, "overview.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("overview screenshot: %s (%d bytes)", path, len(png))
	require.True(t, strings.HasPrefix(string(png), "\x89PNG"), "a PNG")
}
