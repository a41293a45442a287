package core

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// TaskSummary is one line of a task listing, what a table row shows.
type TaskSummary struct {
	ID          uint64
	State       State
	Type        string
	TraceID     string
	Executor    string
	Attempt     uint32
	MaxAttempts uint64
	Priority    uint8
	Error       string // its first line, cut to summaryErrorLen bytes
	Created     time.Time
	Updated     time.Time
}

// summaryErrorLen bounds the error text a listing row carries.
const summaryErrorLen = 120

// BrowseQuery asks for a page of tasks, newest first.
type BrowseQuery struct {
	State  State  // 0: any state
	Type   string // "": any task type
	Before uint64 // only ids below it; 0: from the newest
	Limit  int    // tasks on the page, 1 to MaxBrowseLimit
	// MaxScan bounds the tasks looked at, so that a filter matching few
	// tasks of a large table holds the caller's lock for a bounded time.
	MaxScan int
}

// MaxBrowseLimit is the most tasks one Browse returns.
const MaxBrowseLimit = 1000

// BrowsePage is a page of tasks.
type BrowsePage struct {
	Tasks []TaskSummary
	// Next is the Before of the next page, or 0 when no older task is left.
	Next uint64
	// Scanned is how many tasks were looked at. Cut is true when MaxScan
	// ended the page before Limit matches were found.
	Scanned int
	Cut     bool
}

// Browse returns a page of tasks in descending id order that match q.
// Its work is bounded by q.MaxScan (default 10 x Limit). Like every
// getter, it changes nothing.
func (c *Core) Browse(q BrowseQuery) BrowsePage {
	q.Limit = max(1, min(q.Limit, MaxBrowseLimit))
	if q.MaxScan <= 0 {
		q.MaxScan = 10 * q.Limit
	}
	var page BrowsePage
	var want *taskType
	if q.Type != "" {
		if want = c.types[q.Type]; want == nil {
			return page // no task of a type the core does not know
		}
	}
	last := uint64(0)
	c.tasks.scanDesc(q.Before, q.State, func(t *task) bool {
		if len(page.Tasks) == q.Limit {
			page.Next = last
			return false
		}
		if page.Scanned == q.MaxScan {
			page.Next, page.Cut = last, true
			return false
		}
		page.Scanned++
		last = t.id
		if want != nil && t.typ != want {
			return true
		}
		page.Tasks = append(page.Tasks, summarize(t))
		return true
	})
	return page
}

func summarize(t *task) TaskSummary {
	e, _, _ := strings.Cut(t.errText(), "\n")
	if len(e) > summaryErrorLen {
		cut := summaryErrorLen
		for cut > 0 && !utf8.RuneStart(e[cut]) {
			cut--
		}
		e = e[:cut] + "..."
	}
	return TaskSummary{ID: t.id, State: t.state, Type: t.typ.name, TraceID: t.trace(), Executor: t.execID,
		Attempt: t.attempt, MaxAttempts: t.maxAttempts, Priority: t.priority, Error: e,
		Created: time.UnixMilli(t.createdMs), Updated: time.UnixMilli(t.updatedMs)}
}

// PausedNames returns the paused task types, sorted.
func (c *Core) PausedNames() []string {
	names := make([]string, 0, len(c.paused))
	for n := range c.paused {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
