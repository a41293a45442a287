package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// Bounds of what one page shows and what one request makes the core
// look at.
const (
	pageTasks        = 50     // rows of the task list
	listScan         = 20_000 // tasks a filtered list page looks at, at most
	maxShownExecs    = 200    // executors on the overview
	maxFilterTypeLen = 256    // a task type filter; longer is refused
)

var pageNames = []string{"overview", "tasks", "task", "runs", "login", "error"}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"ts": func(t time.Time) string {
			if t.IsZero() || t.UnixMilli() == 0 {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05.000Z")
		},
		"ago": func(t time.Time) string {
			if t.IsZero() || t.UnixMilli() == 0 {
				return "-"
			}
			return time.Since(t).Round(time.Second).String()
		},
		// pct scales load/slots to width, for a bar: no inline styles,
		// which the page's Content-Security-Policy forbids.
		"pct": func(load, slots, width int) int {
			if slots <= 0 {
				return 0
			}
			return min(width, width*load/slots)
		},
	}
	out := make(map[string]*template.Template, len(pageNames))
	for _, n := range pageNames {
		out[n] = template.Must(template.New(n).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+n+".html"))
	}
	return out
}

// render writes a page whole, or a plain 500 if its template fails.
func (d *Dashboard) render(w http.ResponseWriter, status int, name string, v *view) {
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		d.log.Error("dashboard page failed", "page", name, "err", err)
		http.Error(w, "page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (d *Dashboard) fail(w http.ResponseWriter, status int, err error) {
	d.render(w, status, "error", &view{Title: http.StatusText(status), Page: err.Error()})
}

type stateCount struct {
	Name  string
	Count int
}

type overviewPage struct {
	States    []stateCount
	Total     int
	Executors []core.ExecutorInfo
	MoreExecs int
	Connected int
	Slots     int
	Load      int
	Paused    []string
	Chart     chart
	Refresh   bool
}

func (d *Dashboard) overview(r *http.Request, v *view) (string, int, error) {
	ov := d.o.Source.Overview()
	p := overviewPage{Paused: ov.Paused, Refresh: r.URL.Query().Get("refresh") != ""}
	for _, st := range core.AllStates {
		p.States = append(p.States, stateCount{st.String(), ov.Counts[st]})
		p.Total += ov.Counts[st]
	}
	for _, e := range ov.Executors {
		if e.Connected {
			p.Connected++
			p.Slots += e.Slots
			p.Load += e.Load
		}
	}
	p.Executors = ov.Executors
	if len(p.Executors) > maxShownExecs {
		p.MoreExecs = len(p.Executors) - maxShownExecs
		p.Executors = p.Executors[:maxShownExecs]
	}
	p.Chart = throughput(d.rate.samples(), d.o.SampleEvery, d.o.Samples)
	v.Title, v.Nav, v.Page = "Overview", "overview", p
	return "overview", http.StatusOK, nil
}

type taskListPage struct {
	State, Type string
	States      []string
	Tasks       []core.TaskSummary
	Next        uint64 // the before of the next page, 0 on the last
	Scanned     int
	Cut         bool
}

func (d *Dashboard) taskList(r *http.Request, v *view) (string, int, error) {
	q := r.URL.Query()
	bq := core.BrowseQuery{Limit: pageTasks, MaxScan: listScan, Type: q.Get("type")}
	p := taskListPage{State: q.Get("state"), Type: bq.Type}
	for _, st := range core.AllStates {
		p.States = append(p.States, st.String())
	}
	if p.State != "" {
		st, ok := core.ParseState(p.State)
		if !ok {
			return "", http.StatusBadRequest, fmt.Errorf("unknown state %q", clip(p.State))
		}
		bq.State = st
	}
	if len(bq.Type) > maxFilterTypeLen {
		return "", http.StatusBadRequest, fmt.Errorf("task type filter longer than %d bytes", maxFilterTypeLen)
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseUint(b, 10, 64)
		if err != nil {
			return "", http.StatusBadRequest, errors.New("before: want a task id")
		}
		bq.Before = n
	}
	page := d.o.Source.Browse(bq)
	p.Tasks, p.Scanned, p.Cut = page.Tasks, page.Scanned, page.Cut
	p.Next = page.Next
	v.Title, v.Nav, v.Page = "Tasks", "tasks", p
	return "tasks", http.StatusOK, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
