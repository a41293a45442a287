package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// TypeInfo is one task type of a `type_page` (protocol section 8.7).
type TypeInfo struct {
	Name      string `json:"task_type"`
	Pending   uint64 `json:"pending"`
	Running   uint64 `json:"running"` // dispatched or running
	Paused    bool   `json:"paused"`
	Executors uint64 `json:"executors"` // connected executors that take it
	Slots     uint64 `json:"slots"`     // their slots, summed
	// The handler's description (protocol section 8.11), when an
	// executor gives one: its name, version, argument schema and default
	// timeout. DescriptionCut: it was too large for the reply.
	Handler        string     `json:"handler,omitempty"`
	Version        string     `json:"version,omitempty"`
	Args           []wire.Arg `json:"args,omitempty"`
	TimeoutMs      uint64     `json:"timeout_ms,omitempty"`
	DescriptionCut bool       `json:"description_cut,omitempty"`
	// Extra holds the type's columns this client does not know, by name.
	Extra map[string]string `json:"extra,omitempty"`
}

// TypePage is one `type_page` reply.
type TypePage struct {
	Types   []TypeInfo
	More    bool // more types follow: ask again after the last name
	Skipped int  // types passed over: their names alone fill a frame
}

// TypeList returns one page of the task types the main control knows,
// in byte order of their names, after the name after ("" and first:
// from the start); limit 0 means the main control's default (100).
func (c *Client) TypeList(ctx context.Context, after string, first bool, limit int) (TypePage, error) {
	m, err := c.roundTrip(ctx, wire.KindTypeList, wire.KindTypePage, idempotent, func(b *wire.Builder) {
		if !first {
			b.Str("after", after)
		}
		if limit > 0 {
			b.Uint("limit", uint64(limit))
		}
	})
	if err != nil {
		return TypePage{}, err
	}
	return parseTypePage(m)
}

// TypeListAll follows TypeList to the last page, each page within its own
// pageCtx.
func (c *Client) TypeListAll(pageCtx func() (context.Context, context.CancelFunc)) ([]TypeInfo, error) {
	var all []TypeInfo
	after, first := "", true
	for {
		ctx, cancel := pageCtx()
		page, err := c.TypeList(ctx, after, first, 0)
		cancel()
		if err != nil {
			return all, err
		}
		all = append(all, page.Types...)
		if !page.More {
			return all, nil
		}
		if len(page.Types) == 0 {
			// An older server may pass over only too-large names: there
			// is no name to page after, so say the list is cut short.
			return all, errors.New("type_list: more=true with no type to page after; the list is incomplete")
		}
		after, first = page.Types[len(page.Types)-1].Name, false
	}
}

func parseTypePage(m *wire.Message) (TypePage, error) {
	n, err := m.Uint("count")
	if err != nil {
		return TypePage{}, fmt.Errorf("type_list: bad reply: %w", err)
	}
	if n > wire.MaxKeys {
		return TypePage{}, fmt.Errorf("type_list: bad reply: count %d", n)
	}
	page := TypePage{More: m.Value("more") == "true", Types: make([]TypeInfo, n)}
	if s, ok := m.Get("skipped"); ok {
		page.Skipped, _ = strconv.Atoi(s)
	}
	names := make([]bool, n)
	for _, f := range m.Fields {
		rest, ok := strings.CutPrefix(f.Key, "type.")
		if !ok {
			continue
		}
		idx, col, _ := strings.Cut(rest, ".")
		i, err := strconv.ParseUint(idx, 10, 32)
		if err != nil || i >= n {
			return TypePage{}, fmt.Errorf("type_list: bad reply: key %s", f.Key)
		}
		t := &page.Types[i]
		var num *uint64
		switch col {
		case "":
			t.Name, names[i] = f.Value, true
		case "pending":
			num = &t.Pending
		case "running":
			num = &t.Running
		case "executors":
			num = &t.Executors
		case "slots":
			num = &t.Slots
		case "paused":
			t.Paused = f.Value == "true"
		case "handler":
			t.Handler = f.Value
		case "version":
			t.Version = f.Value
		case "args":
			if t.Args, err = wire.ParseArgs(f.Value); err != nil {
				return TypePage{}, fmt.Errorf("type_list: bad reply: %s: %w", f.Key, err)
			}
		case "timeout_ms":
			num = &t.TimeoutMs
		case "described":
			t.DescriptionCut = f.Value == "cut"
		default:
			if t.Extra == nil {
				t.Extra = map[string]string{}
			}
			t.Extra[col] = f.Value
		}
		if num != nil {
			if *num, err = uintField(f); err != nil {
				return TypePage{}, fmt.Errorf("type_list: bad reply: %w", err)
			}
		}
	}
	for i, ok := range names {
		if !ok {
			return TypePage{}, fmt.Errorf("type_list: bad reply: no type.%d", i)
		}
	}
	return page, nil
}
