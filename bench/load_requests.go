package bench

// The requests of the load tool's mixes (create, update) and the
// verification that every acknowledged write took effect.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

func (c *client) list(ctx context.Context) (string, error) {
	if c.cfg.API == "graphql" {
		return "", c.graphql(ctx, loadListQuery, map[string]any{"first": c.cfg.PageSize}, nil)
	}
	return "", c.do(ctx, http.MethodGet, "/procedures?limit="+strconv.Itoa(c.cfg.PageSize), nil, nil)
}

func (c *client) create(ctx context.Context, name, key string) (string, error) {
	in := map[string]any{"name": name, "priority": "MEDIUM", "state": "TODO", "dueAt": "2030-01-01T00:00:00Z",
		"projectId": c.refs.project, "categoryId": c.refs.category, "doerId": c.refs.member}
	if c.cfg.API == "graphql" {
		var out struct{ CreateProcedure struct{ ID string } }
		err := c.graphqlKeyed(ctx, key, `mutation C($in: CreateProcedureInput!) { createProcedure(input: $in) { id } }`, map[string]any{"in": in}, &out)
		return out.CreateProcedure.ID, err
	}
	var out struct{ ID string }
	err := c.doKeyed(ctx, http.MethodPost, "/procedures", key, in, &out)
	return out.ID, err
}

func (c *client) delete(ctx context.Context, id, key string) error {
	if c.cfg.API == "graphql" {
		return c.graphqlKeyed(ctx, key, `mutation D($id: ID!) { deleteProcedure(id: $id) { success } }`, map[string]any{"id": id}, nil)
	}
	return c.doKeyed(ctx, http.MethodDelete, "/procedures/"+url.PathEscape(id), key, nil, nil)
}

func (c *client) lookupRefs(ctx context.Context) (refs, error) {
	first := func(path string) (string, error) {
		var out struct{ Data []struct{ ID string } }
		if err := c.do(ctx, http.MethodGet, path+"?limit=1", nil, &out); err != nil {
			return "", fmt.Errorf("load: GET %s: %w", path, err)
		}
		if len(out.Data) == 0 {
			return "", fmt.Errorf("load: the workspace has no %s; seed it first", strings.TrimPrefix(path, "/"))
		}
		return out.Data[0].ID, nil
	}
	var r refs
	var err error
	if r.project, err = first("/projects"); err != nil {
		return r, err
	}
	if r.category, err = first("/categories"); err != nil {
		return r, err
	}
	r.member, err = first("/members")
	return r, err
}

// verify checks every acknowledged create exists exactly once (searching by
// its unique name), every create never acknowledged at most once, and every
// acknowledged delete is gone. It returns the creates found more than once.
func (c *client) verify(ctx context.Context, created map[string]string, deleted, unacked []string) (bool, int, []string) {
	var notes []string
	duplicates := 0
	count := func(name string) (int, []string, error) {
		var out struct {
			Data []struct{ ID string }
			Meta struct{ Total int }
		}
		err := c.do(ctx, http.MethodGet, "/procedures?search="+url.QueryEscape(name), nil, &out)
		ids := make([]string, len(out.Data))
		for i, d := range out.Data {
			ids[i] = d.ID
		}
		return out.Meta.Total, ids, err
	}
	for id, name := range created {
		total, ids, err := count(name)
		if err != nil {
			notes = append(notes, fmt.Sprintf("create %s: search failed: %v", id, err))
			continue
		}
		if total > 1 {
			duplicates++
		}
		if total != 1 || len(ids) != 1 || ids[0] != id {
			notes = append(notes, fmt.Sprintf("create %s (%s): found %d times", id, name, total))
		}
	}
	for _, name := range unacked {
		total, _, err := count(name)
		if err != nil {
			notes = append(notes, fmt.Sprintf("unacknowledged create %s: search failed: %v", name, err))
			continue
		}
		if total > 1 {
			duplicates++
			notes = append(notes, fmt.Sprintf("unacknowledged create %s: found %d times", name, total))
		}
	}
	for _, id := range deleted {
		err := c.do(ctx, http.MethodGet, "/procedures/"+url.PathEscape(id), nil, nil)
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != http.StatusNotFound {
			notes = append(notes, fmt.Sprintf("delete %s: still readable (%v)", id, err))
		}
	}
	return len(notes) == 0, duplicates, notes
}

// restShapes are the update mix's five list shapes, each a page of
// PageSize with every nested edge and the total; listShape sends the same
// in GraphQL (the second page's cursor is read at start).
var restShapes = []string{"", "&page=2", "&state=IN_PROGRESS", "&sortBy=dueAt&sortOrder=asc", "&priority=HIGH"}

const loadShapeQuery = `query LoadShape($first: Int!, $after: String, $filter: ProcedureFilter, $orderBy: ProcedureOrder) {
  procedures(first: $first, after: $after, filter: $filter, orderBy: $orderBy) { totalCount nodes {
  id shortId name priority state content categoryId doerId creatorId position dueAt createdAt updatedAt
  projectId workspaceId captureId displayVideo isFineTunedData
  category { id name } doer { id name email } project { id name } comments(last: 3) { nodes { id text createdAt } } } } }`

// listShape reads list shape i (0..4) of restShapes.
func (c *client) listShape(ctx context.Context, i int) error {
	if c.cfg.API != "graphql" {
		return c.do(ctx, http.MethodGet, "/procedures?limit="+strconv.Itoa(c.cfg.PageSize)+restShapes[i], nil, nil)
	}
	return c.graphql(ctx, loadShapeQuery, shapeVars(i, c.cfg.PageSize, c.page2), nil)
}

// shapeVars are loadShapeQuery's variables for list shape i (0..4) of
// restShapes in pages of first; page2 is the second page's cursor.
func shapeVars(i, first int, page2 string) map[string]any {
	vars := map[string]any{"first": first}
	switch i {
	case 1:
		if page2 != "" {
			vars["after"] = page2
		}
	case 2:
		vars["filter"] = map[string]any{"state": "IN_PROGRESS"}
	case 3:
		vars["orderBy"] = map[string]any{"field": "DUE_AT", "direction": "ASC"}
	case 4:
		vars["filter"] = map[string]any{"priority": "HIGH"}
	}
	return vars
}

// secondPage returns the GraphQL cursor after the first page of PageSize.
func (c *client) secondPage(ctx context.Context) (string, error) {
	var out struct {
		Procedures struct{ PageInfo struct{ EndCursor *string } }
	}
	if err := c.graphql(ctx, `query P($first: Int!) { procedures(first: $first) { pageInfo { endCursor } } }`,
		map[string]any{"first": c.cfg.PageSize}, &out); err != nil {
		return "", fmt.Errorf("load: reading the first page's cursor: %w", err)
	}
	if out.Procedures.PageInfo.EndCursor == nil {
		return "", nil
	}
	return *out.Procedures.PageInfo.EndCursor, nil
}

// samplePool pages through the newest procedures (REST, 100 a page) until it
// holds Pool of them with a shortId, or the workspace has no more.
func (c *client) samplePool(ctx context.Context) ([]*target, error) {
	var pool []*target
	for page := 1; len(pool) < c.cfg.Pool; page++ {
		var out struct {
			Data []struct {
				ShortID  *string `json:"shortId"`
				Priority string  `json:"priority"`
			}
		}
		if err := c.do(ctx, http.MethodGet, "/procedures?limit=100&page="+strconv.Itoa(page), nil, &out); err != nil {
			return nil, fmt.Errorf("load: sampling procedures (page %d): %w", page, err)
		}
		for _, d := range out.Data {
			if d.ShortID != nil && len(pool) < c.cfg.Pool {
				pool = append(pool, &target{shortID: *d.ShortID, priority: d.Priority})
			}
		}
		if len(out.Data) < 100 {
			break
		}
	}
	if len(pool) == 0 {
		return nil, errors.New("load: the workspace has no procedures to update; seed it first")
	}
	return pool, nil
}

var priorities = []string{"LOW", "MEDIUM", "HIGH"}

// otherPriority picks a priority other than p, so that every update changes
// the procedure.
func otherPriority(rng *rand.Rand, p string) string {
	for {
		if q := priorities[rng.IntN(len(priorities))]; q != p {
			return q
		}
	}
}

// update sets the priority of the procedure with shortID.
func (c *client) update(ctx context.Context, shortID, priority, key string) error {
	if c.cfg.API == "graphql" {
		var out struct{ UpdateProcedure *struct{ Priority string } }
		err := c.graphqlKeyed(ctx, key, `mutation U($id: ID!, $in: UpdateProcedureInput!) { updateProcedure(id: $id, input: $in) { priority } }`,
			map[string]any{"id": shortID, "in": map[string]any{"priority": priority}}, &out)
		if err == nil && (out.UpdateProcedure == nil || out.UpdateProcedure.Priority != priority) {
			return &apiError{status: 200, code: "wrong_result"}
		}
		return err
	}
	var out struct{ Priority string }
	err := c.doKeyed(ctx, http.MethodPut, "/procedures/"+url.PathEscape(shortID), key, map[string]any{"priority": priority}, &out)
	if err == nil && out.Priority != priority {
		return &apiError{status: 200, code: "wrong_result"}
	}
	return err
}

// priorityOf reads the procedure's priority through the run's API.
func (c *client) priorityOf(ctx context.Context, shortID string) (string, error) {
	if c.cfg.API == "graphql" {
		var out struct{ Procedure *struct{ Priority string } }
		if err := c.graphql(ctx, `query G($id: ID!) { procedure(id: $id) { priority } }`, map[string]any{"id": shortID}, &out); err != nil {
			return "", err
		}
		if out.Procedure == nil {
			return "", &apiError{status: 200, code: "not_found"}
		}
		return out.Procedure.Priority, nil
	}
	var out struct{ Priority string }
	err := c.do(ctx, http.MethodGet, "/procedures/"+url.PathEscape(shortID), nil, &out)
	return out.Priority, err
}

// verifyUpdates checks, for every procedure of the pool the run wrote to,
// that the API returns its last acknowledged priority (or, when updates
// after it were never acknowledged, one of theirs: they may have run). Each
// procedure had one writer, so its last acknowledged write is known.
func (c *client) verifyUpdates(ctx context.Context, pool []*target) (ok bool, checked, uncertain int, notes []string) {
	for _, t := range pool {
		if !t.written {
			continue
		}
		checked++
		if len(t.pending) > 0 {
			uncertain++
		}
		got, err := c.priorityOf(ctx, t.shortID)
		if err != nil {
			notes = append(notes, fmt.Sprintf("update %s: read failed: %v", t.shortID, err))
			continue
		}
		if got != t.priority && !slices.Contains(t.pending, got) {
			notes = append(notes, fmt.Sprintf("update %s: priority %s, last acknowledged %s (unacknowledged after it: %v)", t.shortID, got, t.priority, t.pending))
		}
	}
	return len(notes) == 0, checked, uncertain, notes
}

// printErrors prints a report's errors by kind, sorted, or "errors: none":
