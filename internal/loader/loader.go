// Package loader holds the per-request dataloaders for a procedure's
// category, doer, project and comments (and a comment's author). Each batch
// function is the one way its edge is read.
//
// Loaders never make a request wait on a timer: whoever fetches a list of
// parents calls Prime with the edges that will be resolved, which runs each
// batch function once, synchronously, and fills the cache. Field resolvers
// then find every key already loaded. A Load of a key nobody primed still
// works, batched over dataloader's default window.
package loader

import (
	"context"
	"net/http"
	"sync"

	"github.com/google/uuid"
	"github.com/graph-gophers/dataloader/v7"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/comment"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/project"
)

// Edges says which edges of a list of procedures will be resolved.
type Edges struct {
	Category, Doer, Project, Comments bool
	// CommentAuthors also primes the authors of the loaded comments.
	CommentAuthors bool
}

// AllEdges is every edge, as REST responses embed them all.
var AllEdges = Edges{Category: true, Doer: true, Project: true, Comments: true}

// Loaders are one request's dataloaders. They cache for the request's life
// and must not be shared between requests (each carries its viewer's tenancy).
type Loaders struct {
	Category *dataloader.Loader[uuid.UUID, *ent.Category]
	Member   *dataloader.Loader[uuid.UUID, *ent.Member]
	Project  *dataloader.Loader[uuid.UUID, *ent.Project]
	Comments *dataloader.Loader[uuid.UUID, []*ent.Comment]

	categories func(context.Context, []uuid.UUID) []*dataloader.Result[*ent.Category]
	members    func(context.Context, []uuid.UUID) []*dataloader.Result[*ent.Member]
	projects   func(context.Context, []uuid.UUID) []*dataloader.Result[*ent.Project]
	comments   func(context.Context, []uuid.UUID) []*dataloader.Result[[]*ent.Comment]
}

// New returns fresh loaders reading through client.
func New(client *ent.Client) *Loaders {
	l := &Loaders{
		categories: byID(func(ctx context.Context, keys []uuid.UUID) ([]*ent.Category, error) {
			return client.Category.Query().Where(category.IDIn(keys...)).All(ctx)
		}, func(c *ent.Category) uuid.UUID { return c.ID }),
		members: byID(func(ctx context.Context, keys []uuid.UUID) ([]*ent.Member, error) {
			return client.Member.Query().Where(member.IDIn(keys...)).All(ctx)
		}, func(m *ent.Member) uuid.UUID { return m.ID }),
		projects: byID(func(ctx context.Context, keys []uuid.UUID) ([]*ent.Project, error) {
			return client.Project.Query().Where(project.IDIn(keys...)).All(ctx)
		}, func(p *ent.Project) uuid.UUID { return p.ID }),
		comments: func(ctx context.Context, keys []uuid.UUID) []*dataloader.Result[[]*ent.Comment] {
			cs, err := client.Comment.Query().Where(comment.ProcedureIDIn(keys...)).
				Order(comment.ByCreatedAt(), comment.ByID()).All(ctx)
			out := make([]*dataloader.Result[[]*ent.Comment], len(keys))
			if err != nil {
				for i := range out {
					out[i] = &dataloader.Result[[]*ent.Comment]{Error: err}
				}
				return out
			}
			byProc := make(map[uuid.UUID][]*ent.Comment, len(keys))
			for _, c := range cs {
				byProc[c.ProcedureID] = append(byProc[c.ProcedureID], c)
			}
			for i, k := range keys {
				list := byProc[k]
				if list == nil {
					list = []*ent.Comment{}
				}
				out[i] = &dataloader.Result[[]*ent.Comment]{Data: list}
			}
			return out
		},
	}
	l.Category = dataloader.NewBatchedLoader(l.categories)
	l.Member = dataloader.NewBatchedLoader(l.members)
	l.Project = dataloader.NewBatchedLoader(l.projects)
	l.Comments = dataloader.NewBatchedLoader(l.comments)
	return l
}

// byID adapts a fetch of records by id into a batch function that answers
// keys in order, with nil (not an error) for ids it could not see.
func byID[V any](fetch func(context.Context, []uuid.UUID) ([]V, error), id func(V) uuid.UUID) func(context.Context, []uuid.UUID) []*dataloader.Result[V] {
	return func(ctx context.Context, keys []uuid.UUID) []*dataloader.Result[V] {
		rows, err := fetch(ctx, keys)
		out := make([]*dataloader.Result[V], len(keys))
		if err != nil {
			for i := range out {
				out[i] = &dataloader.Result[V]{Error: err}
			}
			return out
		}
		found := make(map[uuid.UUID]V, len(rows))
		for _, r := range rows {
			found[id(r)] = r
		}
		for i, k := range keys {
			out[i] = &dataloader.Result[V]{Data: found[k]}
		}
		return out
	}
}

// prime runs batch once for the keys not yet cached and stores the results.
func prime[V any](ctx context.Context, l *dataloader.Loader[uuid.UUID, V], batch func(context.Context, []uuid.UUID) []*dataloader.Result[V], keys []uuid.UUID, cached map[uuid.UUID]bool) error {
	var todo []uuid.UUID
	seen := make(map[uuid.UUID]bool, len(keys))
	for _, k := range keys {
		if seen[k] || cached[k] {
			continue
		}
		seen[k] = true
		todo = append(todo, k)
	}
	if len(todo) == 0 {
		return nil
	}
	results := batch(ctx, todo)
	for i, k := range todo {
		if results[i].Error != nil {
			return results[i].Error
		}
		l.Prime(ctx, k, results[i].Data)
		cached[k] = true
	}
	return nil
}

// primed remembers which keys this request already loaded, per edge, so that
// priming twice does not query twice.
type primed struct {
	categories, members, projects, comments map[uuid.UUID]bool
}

func newPrimed() primed {
	return primed{
		categories: map[uuid.UUID]bool{}, members: map[uuid.UUID]bool{},
		projects: map[uuid.UUID]bool{}, comments: map[uuid.UUID]bool{},
	}
}

type ctxKey struct{}

type entry struct {
	*Loaders
	mu     sync.Mutex // guards primed; GraphQL resolves sibling fields concurrently
	primed primed
}

// Middleware gives every request fresh loaders reading through client, as
// gqlgen's dataloader example does. It is installed after authentication,
// so that refused requests build none; the reads are scoped to the viewer's
// workspace by ent's tenancy interceptor, through the context of each Load.
func Middleware(client *ent.Client) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e := &entry{Loaders: New(client), primed: newPrimed()}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, e)))
		})
	}
}

func from(ctx context.Context) *entry {
	e, _ := ctx.Value(ctxKey{}).(*entry)
	if e == nil {
		panic("loader: no loaders in context; wrap the handler with loader.Middleware")
	}
	return e
}

// Reset forgets everything the request's loaders have loaded or primed, so
// that reads after a write see it. A GraphQL mutation runs its root fields
// one after another; each starts with a Reset so that it never renders an
// edge loaded before an earlier root field changed it.
func Reset(ctx context.Context) {
	e, _ := ctx.Value(ctxKey{}).(*entry)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Category.ClearAll()
	e.Member.ClearAll()
	e.Project.ClearAll()
	e.Comments.ClearAll()
	e.primed = newPrimed()
}

// For returns the request's loaders.
func For(ctx context.Context) *Loaders { return from(ctx).Loaders }

// PrimeProcedures loads the requested edges of procs with one statement per
// edge, before any field resolver asks for them.
func PrimeProcedures(ctx context.Context, procs []*ent.Procedure, edges Edges) error {
	if len(procs) == 0 {
		return nil
	}
	e := from(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	var cats, people, projs, procIDs []uuid.UUID
	for _, p := range procs {
		if edges.Category && p.CategoryID != nil {
			cats = append(cats, *p.CategoryID)
		}
		if edges.Doer && p.DoerID != nil {
			people = append(people, *p.DoerID)
		}
		if edges.Project {
			projs = append(projs, p.ProjectID)
		}
		if edges.Comments {
			procIDs = append(procIDs, p.ID)
		}
	}
	if err := prime(ctx, e.Category, e.categories, cats, e.primed.categories); err != nil {
		return err
	}
	if err := prime(ctx, e.Project, e.projects, projs, e.primed.projects); err != nil {
		return err
	}
	if err := prime(ctx, e.Comments, e.comments, procIDs, e.primed.comments); err != nil {
		return err
	}
	if edges.CommentAuthors {
		for _, id := range procIDs {
			cs, err := e.Comments.Load(ctx, id)()
			if err != nil {
				return err
			}
			for _, c := range cs {
				people = append(people, c.AuthorID)
			}
		}
	}
	return prime(ctx, e.Member, e.members, people, e.primed.members)
}

// PrimeMembers loads members by id in one statement, for lists whose items
// name members (comment authors, token owners).
func PrimeMembers(ctx context.Context, memberIDs []uuid.UUID) error {
	e := from(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	return prime(ctx, e.Member, e.members, memberIDs, e.primed.members)
}
