// Package dashboard is the main control's web dashboard, served beside
// /metrics on --http-listen. Its pages are rendered on the server with
// html/template, without JavaScript. The templates and stylesheet are
// embedded in the binary, so it needs no network beyond the main control.
//
// It reads state through a Source. The main control implements it by
// taking the lock of /metrics for each short read. It acts through an
// Actor, a client connection to the main control itself. So an action is
// checked, made durable and confirmed as any client's request is.
package dashboard

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Source is what the dashboard reads. Each call must be safe from any
// goroutine and hold the main control for a short, bounded time.
type Source interface {
	Overview() Overview
	Totals() Totals
	Browse(core.BrowseQuery) core.BrowsePage
	Task(id uint64) (core.TaskInfo, bool)
	// History is the task's recent transitions, oldest first.
	History(id uint64) []core.Transition
}

// Overview is the state the overview page shows.
type Overview struct {
	Counts    [core.NumStates + 1]int
	Executors []core.ExecutorInfo
	Paused    []string // task types paused, sorted
}

// Totals are counters since the main control started, sampled for the
// throughput chart.
type Totals struct {
	Submitted uint64 // task ids handed out
	Succeeded uint64
	Failed    uint64
	Cancelled uint64
}

// Actor performs the dashboard's actions. Its errors are shown to the
// user as they are.
type Actor interface {
	Cancel(ctx context.Context, id uint64) error
	Requeue(ctx context.Context, id uint64, reason string) error
	Pause(ctx context.Context, taskType string) error
	Resume(ctx context.Context, taskType string) error
}

// Options configure a Dashboard.
type Options struct {
	Source Source
	Actor  Actor
	// Token is the main control's shared token. With one, every page
	// needs a login with it. Without one, pages are open, as the wire
	// is, and only loopback peers may take actions.
	Token []byte
	// AdminToken is the main control's admin token. With one, the admin
	// actions (requeue, pause, resume) need a login that proves it too.
	AdminToken []byte
	// ListenHost is the host of --http-listen. Without a token, a request
	// is served only when its Host names it, localhost or an IP address.
	// So a DNS-rebinding page cannot reach a loopback dashboard.
	ListenHost string
	Logger     *slog.Logger
	// SampleEvery and Samples set the throughput ring. The default of
	// 5 s x 120 keeps the last ten minutes.
	SampleEvery time.Duration
	Samples     int
}

// Dashboard is an http.Handler serving the pages. Close stops its sampler.
type Dashboard struct {
	o        Options
	log      *slog.Logger
	pages    map[string]*template.Template
	mux      *http.ServeMux
	sessions *sessions
	rate     *ring
	stop     chan struct{}
	done     sync.WaitGroup
	once     sync.Once
}

// actionTimeout bounds one action's round trip to the main control.
const actionTimeout = 10 * time.Second

// New returns a Dashboard and starts its throughput sampler.
func New(o Options) *Dashboard {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 5 * time.Second
	}
	if o.Samples < 2 {
		o.Samples = 120
	}
	d := &Dashboard{o: o, log: o.Logger, pages: parsePages(), sessions: newSessions(o.Token, o.AdminToken),
		rate: newRing(o.Samples), stop: make(chan struct{})}
	d.routes()
	d.rate.add(time.Now(), o.Source.Totals())
	d.done.Add(1)
	go d.sample()
	return d
}

// Close stops the sampler. It is safe to call more than once.
func (d *Dashboard) Close() {
	d.once.Do(func() { close(d.stop) })
	d.done.Wait()
}

func (d *Dashboard) sample() {
	defer d.done.Done()
	t := time.NewTicker(d.o.SampleEvery)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			d.rate.add(now, d.o.Source.Totals())
		case <-d.stop:
			return
		}
	}
}

func (d *Dashboard) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /login", d.loginPage)
	m.HandleFunc("POST /login", d.login)
	m.HandleFunc("POST /logout", d.logout)
	m.HandleFunc("GET /{$}", d.page(d.overview))
	m.HandleFunc("GET /tasks", d.page(d.taskList))
	m.HandleFunc("GET /tasks/{id}", d.page(d.taskPage))
	m.HandleFunc("GET /runs", d.page(d.runs))
	m.HandleFunc("POST /tasks/{id}/cancel", d.action(d.cancel))
	m.HandleFunc("POST /tasks/{id}/requeue", d.adminAction(d.requeue))
	m.HandleFunc("POST /types/pause", d.adminAction(d.pause))
	m.HandleFunc("POST /types/resume", d.adminAction(d.resume))
	d.mux = m
}

// ServeHTTP serves a dashboard page, after the checks every request gets.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.o.Token == nil && !hostAllowed(r.Host, d.o.ListenHost) {
		http.Error(w, "this dashboard answers only to its own address, localhost or an IP address (Host header refused)", http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	d.mux.ServeHTTP(w, r)
}
