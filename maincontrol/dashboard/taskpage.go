package dashboard

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

type kv struct{ K, V string }

type taskPage struct {
	T        core.TaskInfo
	State    string
	Args     []kv
	Out      []kv
	Terminal bool
	Waiting  bool
	Requeue  bool // failed or cancelled: requeue may give it another run
	History  []core.Transition
}

// fields decodes stored `prefix<k>=<v>` lines (escaped as on the wire)
// into pairs without the prefix.
func fields(lines, prefix string) []kv {
	if lines == "" {
		return nil
	}
	var dec wire.Decoder
	m, err := dec.DecodePayload([]byte("type=x\n" + lines))
	if err != nil {
		return []kv{{"(undecodable)", lines}}
	}
	var out []kv
	for k, v := range m.WithPrefix(prefix) {
		out = append(out, kv{strings.Clone(k), strings.Clone(v)})
	}
	return out
}

func taskID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, &errStatus{http.StatusBadRequest, errors.New("a task id is a number from 1")}
	}
	return id, nil
}

func (d *Dashboard) taskPage(r *http.Request, v *view) (string, int, error) {
	id, err := taskID(r)
	if err != nil {
		return "", http.StatusBadRequest, err
	}
	t, ok := d.o.Source.Task(id)
	if !ok {
		return "", http.StatusNotFound, errors.New("unknown task " + strconv.FormatUint(id, 10) +
			": never submitted, or ended and dropped after its retention")
	}
	p := taskPage{T: t, State: t.State.String(), Args: fields(t.Args, wire.PrefixArg),
		Out: fields(t.Out, wire.PrefixOut), Terminal: t.State.Terminal(), Waiting: t.State == core.Waiting,
		Requeue: t.State == core.Failed || t.State == core.Cancelled, History: d.o.Source.History(id)}
	v.Title, v.Nav, v.Page = "Task "+strconv.FormatUint(id, 10), "tasks", p
	return "task", http.StatusOK, nil
}

func (d *Dashboard) cancel(ctx context.Context, r *http.Request) (string, error) {
	id, err := taskID(r)
	if err != nil {
		return "", err
	}
	if err := d.o.Actor.Cancel(ctx, id); err != nil {
		return "", actionError("cancel", err)
	}
	return "/tasks/" + strconv.FormatUint(id, 10) + "?done=cancel", nil
}

func (d *Dashboard) requeue(ctx context.Context, r *http.Request) (string, error) {
	id, err := taskID(r)
	if err != nil {
		return "", err
	}
	if err := d.o.Actor.Requeue(ctx, id, "dashboard "+r.RemoteAddr); err != nil {
		return "", actionError("requeue", err)
	}
	return "/tasks/" + strconv.FormatUint(id, 10) + "?done=requeue", nil
}

// formType is the task type a pause or resume form names.
func formType(r *http.Request) (string, error) {
	t := r.PostForm.Get("type")
	if t == "" || len(t) > maxFilterTypeLen {
		return "", &errStatus{http.StatusBadRequest, errors.New("a task type of 1 to 256 bytes, please")}
	}
	return t, nil
}

func (d *Dashboard) pause(ctx context.Context, r *http.Request) (string, error) {
	t, err := formType(r)
	if err != nil {
		return "", err
	}
	if err := d.o.Actor.Pause(ctx, t); err != nil {
		return "", actionError("pause", err)
	}
	return "/?done=pause", nil
}

func (d *Dashboard) resume(ctx context.Context, r *http.Request) (string, error) {
	t, err := formType(r)
	if err != nil {
		return "", err
	}
	if err := d.o.Actor.Resume(ctx, t); err != nil {
		return "", actionError("resume", err)
	}
	return "/?done=resume", nil
}

// actionError gives a refusal by the main control its HTTP status. The
// request was fine, but the task was not in a state for it.
func actionError(what string, err error) error {
	var e *client.Error
	if errors.As(err, &e) {
		status := http.StatusConflict
		switch e.Code {
		case wire.CodeUnknownTask:
			status = http.StatusNotFound
		case wire.CodeNotPermitted, wire.CodeAuthFailed:
			status = http.StatusForbidden
		}
		return &errStatus{status, errors.New(what + " refused by the main control: " + e.Error())}
	}
	return &errStatus{http.StatusBadGateway, errors.New(what + " failed: " + err.Error())}
}

// runWindow is how many of the newest tasks the runs page groups. It
// reads them a page of core.MaxBrowseLimit at a time.
const runWindow = 5000

// maxRuns bounds the groups the runs page lists.
const maxRuns = 100

type run struct {
	Trace   string
	Tasks   int
	States  []stateCount
	Types   []string
	First   uint64
	Last    uint64
	Created time.Time
	Updated time.Time
	Done    bool // every task ended
}

type runsPage struct {
	Window  int // tasks looked at
	Singles int // tasks alone in their trace, not listed
	Runs    []run
	More    int
	Trace   string
	Tasks   []core.TaskSummary
}

func (d *Dashboard) runs(r *http.Request, v *view) (string, int, error) {
	trace := r.URL.Query().Get("trace")
	if len(trace) > 256 {
		return "", http.StatusBadRequest, errors.New("trace id longer than 256 bytes")
	}
	var tasks []core.TaskSummary
	before := uint64(0)
	for len(tasks) < runWindow {
		page := d.o.Source.Browse(core.BrowseQuery{Before: before, Limit: min(core.MaxBrowseLimit, runWindow-len(tasks))})
		tasks = append(tasks, page.Tasks...)
		if page.Next == 0 {
			break
		}
		before = page.Next
	}
	p := runsPage{Window: len(tasks), Trace: trace}
	if trace != "" {
		for _, t := range tasks {
			if t.TraceID == trace {
				p.Tasks = append(p.Tasks, t)
			}
		}
		v.Title, v.Nav, v.Page = "Run "+clip(trace), "runs", p
		return "runs", http.StatusOK, nil
	}
	groups := map[string]*run{}
	counts := map[string]*[core.NumStates + 1]int{}
	for _, t := range tasks {
		g := groups[t.TraceID]
		if g == nil {
			g = &run{Trace: t.TraceID, First: t.ID, Last: t.ID, Created: t.Created, Updated: t.Updated, Done: true}
			groups[t.TraceID], counts[t.TraceID] = g, new([core.NumStates + 1]int)
		}
		g.Tasks++
		g.First, g.Last = min(g.First, t.ID), max(g.Last, t.ID)
		if t.Created.Before(g.Created) {
			g.Created = t.Created
		}
		if t.Updated.After(g.Updated) {
			g.Updated = t.Updated
		}
		g.Done = g.Done && t.State.Terminal()
		if !slices.Contains(g.Types, t.Type) && len(g.Types) < 8 {
			g.Types = append(g.Types, t.Type)
		}
		counts[t.TraceID][t.State]++
	}
	for trace, g := range groups {
		if g.Tasks == 1 {
			p.Singles++
			continue
		}
		for _, st := range core.AllStates {
			if n := counts[trace][st]; n > 0 {
				g.States = append(g.States, stateCount{st.String(), n})
			}
		}
		p.Runs = append(p.Runs, *g)
	}
	slices.SortFunc(p.Runs, func(a, b run) int { return cmp.Compare(b.Last, a.Last) })
	if len(p.Runs) > maxRuns {
		p.More = len(p.Runs) - maxRuns
		p.Runs = p.Runs[:maxRuns]
	}
	v.Title, v.Nav, v.Page = "Runs", "runs", p
	return "runs", http.StatusOK, nil
}
