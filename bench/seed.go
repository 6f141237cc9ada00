// Package bench is procsvc's load tooling, run by cmd/procsvc-bench and
// bench/measure.sh, never linked by the server: Seed loads synthetic
// workspaces (deterministic for a seed, written in large batches on either
// database; tests seed with it too), Load drives a running server with
// concurrent clients and verifies every acknowledged write, Live times
// live-update deliveries to many subscriptions. Its Go benchmarks measure
// the procedure list page over each face and the project dashboard.
package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// Shape is the size of one seeded workspace.
type Shape struct {
	Procedures  int
	Projects    int
	Categories  int
	Members     int
	MaxComments int // each procedure gets 0..MaxComments comments
}

// W is the workload of the performance issue's main workspace.
var W = Shape{Procedures: 100_000, Projects: 50, Categories: 30, Members: 20, MaxComments: 3}

// Seeded describes one seeded workspace.
type Seeded struct {
	WorkspaceID uuid.UUID
	AdminToken  string
	MemberIDs   []uuid.UUID
	ProjectIDs  []uuid.UUID
	CategoryIDs []uuid.UUID
}

// batch is the rows per INSERT: 1 000 procedures × 20 columns stays under
// both SQLite's and PostgreSQL's bound-parameter limits.
const batch = 1000

// Seed creates one workspace of shape s, deterministic for seed (ids and
// timestamps aside, which are fresh). It prints nothing and returns the
// admin's token secret.
func Seed(ctx context.Context, client *ent.Client, name, key string, s Shape, seed uint64) (*Seeded, error) {
	ctx = viewer.System(ctx)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ws, err := client.Workspace.Create().SetName(name).SetKey(key).Save(ctx)
	if err != nil {
		return nil, err
	}
	out := &Seeded{WorkspaceID: ws.ID}
	members := make([]*ent.MemberCreate, max(s.Members, 1))
	for i := range members {
		role := member.RoleMEMBER
		if i == 0 {
			role = member.RoleADMIN
		}
		members[i] = client.Member.Create().SetWorkspaceID(ws.ID).SetName(fmt.Sprintf("Member %03d", i)).
			SetEmail(fmt.Sprintf("m%03d@%s.example", i, key)).SetRole(role)
	}
	ms, err := client.Member.CreateBulk(members...).Save(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		out.MemberIDs = append(out.MemberIDs, m.ID)
	}
	secret, hash := auth.NewSecret()
	if _, err := client.Token.Create().SetWorkspaceID(ws.ID).SetMemberID(ms[0].ID).SetName("bench").SetSecretHash(hash).Save(ctx); err != nil {
		return nil, err
	}
	out.AdminToken = secret
	now := time.Now().UTC().Truncate(time.Millisecond)
	projects := make([]*ent.ProjectCreate, max(s.Projects, 1))
	for i := range projects {
		projects[i] = client.Project.Create().SetWorkspaceID(ws.ID).SetName(fmt.Sprintf("Project %03d", i)).
			SetStartedAt(now.AddDate(0, 0, -rng.IntN(365))).SetDueAt(now.AddDate(0, 0, 30+rng.IntN(365)))
	}
	ps, err := client.Project.CreateBulk(projects...).Save(ctx)
	if err != nil {
		return nil, err
	}
	projectNames := map[uuid.UUID]string{}
	for _, p := range ps {
		out.ProjectIDs = append(out.ProjectIDs, p.ID)
		projectNames[p.ID] = p.Name
	}
	categories := make([]*ent.CategoryCreate, s.Categories)
	for i := range categories {
		categories[i] = client.Category.Create().SetWorkspaceID(ws.ID).SetName(fmt.Sprintf("Category %03d", i))
	}
	if len(categories) > 0 {
		cs, err := client.Category.CreateBulk(categories...).Save(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out.CategoryIDs = append(out.CategoryIDs, c.ID)
		}
	}
	priorities := []procedure.Priority{procedure.PriorityLOW, procedure.PriorityMEDIUM, procedure.PriorityHIGH}
	states := procedure.StateValues()
	var comments []*ent.CommentCreate
	flushComments := func() error {
		for len(comments) > 0 {
			n := min(batch, len(comments))
			if err := client.Comment.CreateBulk(comments[:n]...).Exec(ctx); err != nil {
				return err
			}
			comments = comments[n:]
		}
		return nil
	}
	for start := 0; start < s.Procedures; start += batch {
		n := min(batch, s.Procedures-start)
		rows := make([]*ent.ProcedureCreate, n)
		for i := range rows {
			num := int64(start + i + 1)
			// Spread creation over the past year, oldest first, so that
			// "newest" is a real index range and not insertion order.
			created := now.Add(-time.Duration(s.Procedures-int(num)) * time.Minute)
			id := ids.New(ids.KindProcedure)
			projectID := out.ProjectIDs[rng.IntN(len(out.ProjectIDs))]
			c := client.Procedure.Create().SetID(id).SetWorkspaceID(ws.ID).
				SetNumber(num).SetShortID(key + "-" + strconv.FormatInt(num, 10)).
				SetName(fmt.Sprintf("Procedure %d %s", num, words[rng.IntN(len(words))])).
				SetPriority(priorities[rng.IntN(len(priorities))]).
				SetState(states[rng.IntN(len(states))]).
				SetContent(fmt.Sprintf("Step one: %s. Step two: %s.", words[rng.IntN(len(words))], words[rng.IntN(len(words))])).
				SetDoerID(out.MemberIDs[rng.IntN(len(out.MemberIDs))]).
				SetCreatorID(out.MemberIDs[0]).
				SetProjectID(projectID).SetProjectName(projectNames[projectID]).
				SetPosition(float64(num) * 1024).
				SetDueAt(created.AddDate(0, 0, rng.IntN(90))).
				SetCreatedAt(created).SetUpdatedAt(created)
			if len(out.CategoryIDs) > 0 {
				c.SetCategoryID(out.CategoryIDs[rng.IntN(len(out.CategoryIDs))])
			}
			rows[i] = c
			for k := rng.IntN(s.MaxComments + 1); k > 0; k-- {
				comments = append(comments, client.Comment.Create().SetWorkspaceID(ws.ID).SetProcedureID(id).
					SetAuthorID(out.MemberIDs[rng.IntN(len(out.MemberIDs))]).
					SetText("Looks good: "+words[rng.IntN(len(words))]).SetCreatedAt(created).SetUpdatedAt(created))
			}
		}
		if err := client.Procedure.CreateBulk(rows...).Exec(ctx); err != nil {
			return nil, err
		}
		for len(comments) >= batch {
			if err := flushComments(); err != nil {
				return nil, err
			}
		}
	}
	if err := flushComments(); err != nil {
		return nil, err
	}
	if err := core.RebuildTallies(ctx, client, ws.ID); err != nil {
		return nil, err
	}
	// Bump the version too: a server already running must not serve
	// responses cached before these rows existed.
	if err := client.Workspace.UpdateOneID(ws.ID).SetProcedureSeq(int64(s.Procedures)).AddVersion(1).Exec(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

var words = []string{
	"deploy", "review", "rollback", "audit", "onboard", "migrate", "backup", "restore", "rotate keys",
	"invoice", "triage", "release", "benchmark", "document", "escalate", "archive", "verify", "approve",
}

// SeedComments writes n comments by author on the procedure procedureID of
// workspaceID, in batches (a long-running procedure's history: tests give
// one thousands): comment i has the text text(i) and is created at
// from + i seconds, so that they are oldest first in the order of i.
func SeedComments(ctx context.Context, client *ent.Client, workspaceID, procedureID, author uuid.UUID, n int, from time.Time, text func(i int) string) error {
	ctx = viewer.System(ctx)
	for start := 0; start < n; start += batch {
		rows := make([]*ent.CommentCreate, min(batch, n-start))
		for j := range rows {
			i := start + j
			at := from.Add(time.Duration(i) * time.Second)
			rows[j] = client.Comment.Create().SetWorkspaceID(workspaceID).SetProcedureID(procedureID).SetAuthorID(author).
				SetText(text(i)).SetCreatedAt(at).SetUpdatedAt(at)
		}
		if err := client.Comment.CreateBulk(rows...).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
