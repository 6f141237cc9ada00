package bench

// The dashboard mix's read: the project dashboard of the nested-connections
// issue (docs/performance.md), one GraphQL request three connections deep,
// and the check every answer to it must pass.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// The dashboard's page sizes: projects, each project's procedures, each
// procedure's comments.
const (
	DashboardProjects   = 20
	DashboardProcedures = 10
	DashboardComments   = 5
)

// DashboardQuery is the project dashboard: 20 projects, each with its newest
// 10 procedures (with category, doer, project and the project's total) and
// each procedure's oldest 5 comments with their total. Its complexity is
// 1 + 20 × (3 + 10 × (5 + 5)) = 2 061, under the limit of 2 500; its
// statements do not grow with the counts (graph's statement-count tests).
const DashboardQuery = `query Dashboard {
  projects(first: 20) {
    totalCount
    nodes {
      id name
      procedures(first: 10) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes {
          id shortId name priority state dueAt
          category { id name }
          doer { id name }
          project { id name }
          comments(first: 5) { totalCount nodes { id text createdAt } }
        }
      }
    }
  }
}`

// dashboardResponse is what CheckDashboard reads of an answer: only what it
// checks, so that the client spends little CPU on each.
type dashboardResponse struct {
	Data *struct {
		Projects struct {
			TotalCount *int
			Nodes      []struct {
				ID         string
				Procedures struct {
					TotalCount *int
					PageInfo   struct{ HasNextPage bool }
					Nodes      []struct {
						ShortID  string
						Project  *struct{ ID string }
						Comments struct {
							TotalCount *int
							Nodes      []struct{ ID string }
						}
					}
				}
			}
		}
	}
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

// codeWrongShape is the code of a dashboard answer that fails its check.
const codeWrongShape = "wrong_shape"

// CheckDashboard checks an answer to DashboardQuery: no errors; as many
// projects as the page holds (20, or all if fewer); for each project its
// procedures' total, as many of them as the page holds (10, or the total if
// fewer), each of that project, and hasNextPage exactly when more remain;
// for each procedure its comments' total and as many of them as the page
// holds (5, or the total if fewer). Counts are compared within one answer,
// so the check holds under writes that change no membership (the mixes'
// priority updates).
func CheckDashboard(raw []byte) error {
	_, err := checkDashboard(raw)
	return err
}

// checkDashboard is CheckDashboard, also returning the code to count the
// failure under: the first GraphQL error's, or codeWrongShape.
func checkDashboard(raw []byte) (string, error) {
	var r dashboardResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return "malformed_response", fmt.Errorf("dashboard: %w", err)
	}
	if len(r.Errors) > 0 {
		code := r.Errors[0].Extensions.Code
		if code == "" {
			code = "graphql_error"
		}
		return code, fmt.Errorf("dashboard: error %s: %s", code, r.Errors[0].Message)
	}
	wrong := func(format string, args ...any) (string, error) {
		return codeWrongShape, fmt.Errorf("dashboard: "+format, args...)
	}
	if r.Data == nil || r.Data.Projects.TotalCount == nil {
		return wrong("no data or no projects.totalCount")
	}
	projects := r.Data.Projects
	if want := min(DashboardProjects, *projects.TotalCount); len(projects.Nodes) != want {
		return wrong("%d projects of %d, want %d", len(projects.Nodes), *projects.TotalCount, want)
	}
	for _, p := range projects.Nodes {
		procs := p.Procedures
		if procs.TotalCount == nil {
			return wrong("project %s: no procedures.totalCount", p.ID)
		}
		total := *procs.TotalCount
		if want := min(DashboardProcedures, total); len(procs.Nodes) != want {
			return wrong("project %s: %d procedures of %d, want %d", p.ID, len(procs.Nodes), total, want)
		}
		if procs.PageInfo.HasNextPage != (total > DashboardProcedures) {
			return wrong("project %s: hasNextPage %t with %d procedures", p.ID, procs.PageInfo.HasNextPage, total)
		}
		for _, pr := range procs.Nodes {
			if pr.Project == nil || pr.Project.ID != p.ID {
				return wrong("project %s lists %s of project %v", p.ID, pr.ShortID, pr.Project)
			}
			cs := pr.Comments
			if cs.TotalCount == nil {
				return wrong("procedure %s: no comments.totalCount", pr.ShortID)
			}
			if want := min(DashboardComments, *cs.TotalCount); len(cs.Nodes) != want {
				return wrong("procedure %s: %d comments of %d, want %d", pr.ShortID, len(cs.Nodes), *cs.TotalCount, want)
			}
		}
	}
	return "", nil
}

// maxShapeNotes bounds the failed checks a run describes (all are counted).
const maxShapeNotes = 5

// dashboard reads DashboardQuery and, with check, checks the answer; a
// failed check is an error of its code, the first few described in the
// report. Without check, only errors are looked for.
func (c *client) dashboard(ctx context.Context, check bool) error {
	if !check {
		return c.graphql(ctx, DashboardQuery, nil, nil)
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodPost, "/graphql", map[string]any{"query": DashboardQuery, "variables": nil}, &raw); err != nil {
		return err
	}
	c.shapeChecked.Add(1)
	code, err := checkDashboard(raw)
	if err == nil {
		return nil
	}
	c.shapeMu.Lock()
	if len(c.shapeNotes) < maxShapeNotes {
		c.shapeNotes = append(c.shapeNotes, err.Error())
	}
	c.shapeMu.Unlock()
	return &apiError{status: http.StatusOK, code: code}
}
