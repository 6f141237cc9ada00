package rest

// The change log's endpoints (docs/api.md, "Events"): a procedure's
// history and the workspace's events, each item in core.Event's shape (the
// shape webhooks deliver), in the list envelope with the cursor of the
// next page.

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
)

// EventList is a page of events: the list envelope, whose meta also
// carries the cursor of the next page (null on the last).
type EventList struct {
	Data []core.Event `json:"data"`
	Meta EventMeta    `json:"meta"`
}

// EventMeta is an event list's total and where its next page starts.
type EventMeta struct {
	Total      int     `json:"total"`
	NextCursor *string `json:"nextCursor"`
}

// restNames are core's names of the events lists' arguments as REST spells
// them: after is the version bound here (GraphQL's afterVersion), cursor
// the list's cursor (GraphQL's after).
var restNames = map[string]string{"after": "cursor", "afterVersion": "after"}

// eventWindow reads the page of an events list: by number (page, limit)
// or after a cursor (cursor, limit).
func eventWindow(p *params, def, max int) core.Window {
	w := page(p, def, max)
	if c, ok := p.get("cursor"); ok {
		cursor := core.Cursor(c)
		w.After = &cursor
	}
	return w
}

// writeEvents answers a page of events.
func writeEvents(w http.ResponseWriter, list *core.EventList, err error) error {
	if err != nil {
		return apperr.Renamed(err, restNames)
	}
	out := EventList{Data: make([]core.Event, len(list.Items)), Meta: EventMeta{Total: list.Total}}
	for i, e := range list.Items {
		if out.Data[i], err = core.EventOf(e); err != nil {
			return err
		}
	}
	if n := len(list.Items); n > 0 && list.PageInfo.HasNextPage {
		next := string(list.Cursor(list.Items[n-1]))
		out.Meta.NextCursor = &next
	}
	return ok(w, out)
}

// procedureHistory answers a procedure's history, newest first; a deleted
// procedure's by its id.
func (a *API) procedureHistory(w http.ResponseWriter, r *http.Request) error {
	p := newParams(r.URL.Query())
	window := eventWindow(p, core.DefaultHistoryPageSize, core.MaxHistoryPageSize)
	if err := p.finish(); err != nil {
		return err
	}
	list, err := a.r.HistoryPage(r.Context(), r.PathValue("id"), window)
	return writeEvents(w, list, err)
}

// listEvents answers the workspace's events, newest first unless
// order=asc, narrowed by the filter parameters.
func (a *API) listEvents(w http.ResponseWriter, r *http.Request) error {
	p := newParams(r.URL.Query())
	window := eventWindow(p, core.DefaultEventPageSize, core.MaxEventPageSize)
	order := core.EventOrder{OldestFirst: p.enum([]string{"asc", "desc"}, "order", "sortOrder") == "asc"}
	filter := core.EventFilter{
		After:       p.version("after"),
		Kinds:       p.list("kind"),
		EntityID:    p.id("entityId"),
		ProcedureID: p.id("procedureId"),
		ProjectID:   p.id("projectId"),
		ActorID:     p.id("actorId"),
	}
	if err := p.finish(); err != nil {
		return err
	}
	list, err := a.r.EventPage(r.Context(), filter, order, window)
	return writeEvents(w, list, err)
}

// version reads a workspace version: decimal digits, 0 or more.
func (p *params) version(name string) *int64 {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || strings.TrimLeft(v, "0123456789") != "" {
		p.val.Add(name, "must be a version: a whole number, 0 or more")
		return nil
	}
	return &n
}

// list reads a parameter that may be repeated (kind=a&kind=b) or list its
// values separated by commas (kind=a,b), or both. An empty value is kept,
// for the core to refuse.
func (p *params) list(name string) []string {
	p.used[name] = true
	var out []string
	for _, v := range p.q[name] {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}
