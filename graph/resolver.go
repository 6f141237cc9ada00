package graph

import (
	"context"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/graph/model"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/limits"
	"github.com/procsvc/procsvc/internal/loader"
	"github.com/procsvc/procsvc/internal/respcache"
)

// Resolver is the root of the GraphQL resolvers. Resolvers translate
// arguments, call the core service and prime the dataloaders for what the
// query selects; they hold no business rules. The REST layer calls these same
// resolvers: the generated methods where their arguments say everything, and
// the entries below where it must say what an operation would have (which
// edges the response shows) or what the schema's arguments cannot (a page by
// number, core's sort). Generated methods that return procedures read the
// operation's selection (requestedEdges, PrimeList) and so run only inside a
// GraphQL operation: REST reaches procedures through the *WithEdges entries
// (edges primed).
type Resolver struct {
	Service *core.Service
	// MaxResponseBytes bounds the bytes of each response, GraphQL's and
	// REST's (ResponseBytes; 0: limits.ResponseBytes).
	MaxResponseBytes int
}

// NewResolver returns a Resolver over svc.
func NewResolver(svc *core.Service) *Resolver { return &Resolver{Service: svc} }

// ResponseBytes is the bound on the bytes of each response r renders, on
// both faces: MaxResponseBytes, else limits.ResponseBytes.
func (r *Resolver) ResponseBytes() int {
	if r.MaxResponseBytes > 0 {
		return r.MaxResponseBytes
	}
	return limits.ResponseBytes
}

// The entries both faces share. Each primes, for the procedures it returns,
// the edges the response shows: GraphQL's resolvers pass what the operation
// selects (requestedEdges), REST passes what its fixed shapes embed
// (loader.AllEdges).

// ProcedureWithEdges returns the procedure id names with edges primed.
func (r *Resolver) ProcedureWithEdges(ctx context.Context, id string, edges loader.Edges) (*ent.Procedure, error) {
	return prime(ctx, edges)(r.Service.Procedure(ctx, id))
}

// ProceduresWithEdges returns the page w selects of the procedures f matches,
// sorted by o, with edges primed for all of them at once.
func (r *Resolver) ProceduresWithEdges(ctx context.Context, f core.ProcedureFilter, o core.ProcedureOrder, w core.Window, edges loader.Edges) (*core.ProcedureList, error) {
	list, err := r.Service.FindProcedures(ctx, f, o, w)
	if err != nil {
		return nil, err
	}
	if err := loader.PrimeListed(ctx, list.Items, edges); err != nil {
		return nil, err
	}
	return list, nil
}

// CreateProcedureWithEdges creates a procedure from input and returns it with
// edges primed.
func (r *Resolver) CreateProcedureWithEdges(ctx context.Context, input model.CreateProcedureInput, edges loader.Edges) (*ent.Procedure, error) {
	return prime(ctx, edges)(r.Service.CreateProcedure(ctx, core.CreateProcedureInput{
		Name:              input.Name,
		Priority:          string(input.Priority),
		State:             string(input.State),
		DueAt:             timePtr(input.DueAt),
		CategoryID:        input.CategoryID,
		DoerID:            input.DoerID,
		ProjectID:         input.ProjectID,
		Content:           input.Content,
		GenerateProcedure: input.GenerateProcedure != nil && *input.GenerateProcedure,
		ContentType:       strPtr(input.ContentType),
		DocStyle:          strPtr(input.DocStyle),
		Language:          strPtr(input.Language),
		CaptureID:         input.CaptureID,
		DisplayVideo:      input.DisplayVideo,
		IsFineTunedData:   input.IsFineTunedData,
	}))
}

// UpdateProcedureWithEdges changes the fields input sets on the procedure id
// names (if it was last updated at ifUpdatedAt, when given) and returns it
// with edges primed.
func (r *Resolver) UpdateProcedureWithEdges(ctx context.Context, id string, input model.UpdateProcedureInput, ifUpdatedAt *time.Time, edges loader.Edges) (*ent.Procedure, error) {
	return prime(ctx, edges)(r.Service.UpdateProcedure(ctx, id, core.UpdateProcedureInput{
		Name:            optional(input.Name),
		Priority:        optionalString(input.Priority),
		State:           optionalString(input.State),
		Content:         optional(input.Content),
		CategoryID:      optional(input.CategoryID),
		DoerID:          optional(input.DoerID),
		ProjectID:       optional(input.ProjectID),
		DueAt:           optional(input.DueAt),
		Position:        optional(input.Position),
		CaptureID:       optional(input.CaptureID),
		DisplayVideo:    optional(input.DisplayVideo),
		IsFineTunedData: optional(input.IsFineTunedData),
	}, core.Preconditions(ifUpdatedAt)...))
}

// ProjectPage, CategoryPage and MemberPage return the page w selects of the
// records f matches. Their records have no edges to prime: the entries are
// where both faces meet the core, so that an edge added later is primed for
// both.

// ProjectPage returns a page of projects.
func (r *Resolver) ProjectPage(ctx context.Context, f core.ListFilter, w core.Window) (*core.ProjectList, error) {
	return r.Service.FindProjects(ctx, f, w)
}

// CategoryPage returns a page of categories.
func (r *Resolver) CategoryPage(ctx context.Context, f core.ListFilter, w core.Window) (*core.CategoryList, error) {
	return r.Service.FindCategories(ctx, f, w)
}

// MemberPage returns a page of members.
func (r *Resolver) MemberPage(ctx context.Context, f core.ListFilter, w core.Window) (*core.MemberList, error) {
	return r.Service.FindMembers(ctx, f, w)
}

// CommentPage returns the page w selects of the comments, oldest first, of
// the procedure idOrShortID names. The procedure is read through the core,
// so a foreign or missing one is not_found as everywhere; its comments are
// then the same core read as a GraphQL comments page at a cursor.
func (r *Resolver) CommentPage(ctx context.Context, idOrShortID string, w core.Window) (*core.CommentList, error) {
	p, err := r.Service.Procedure(ctx, idOrShortID)
	if err != nil {
		return nil, err
	}
	return r.Service.ProcedureComments(ctx, p.ID, w)
}

// HistoryPage returns the page w selects of the history of the procedure
// idOrShortID names, newest first: its events and its comments'. A
// deleted procedure's history is still read by its id (core).
func (r *Resolver) HistoryPage(ctx context.Context, idOrShortID string, w core.Window) (*core.EventList, error) {
	// Pruning deletes events without a write: no cached answer may outlive
	// it (internal/respcache keeps an answer until the next write).
	respcache.MarkUncacheable(ctx)
	return r.Service.ProcedureHistory(ctx, idOrShortID, w)
}

// EventPage returns the page w selects of the workspace's events f admits,
// in order o.
func (r *Resolver) EventPage(ctx context.Context, f core.EventFilter, o core.EventOrder, w core.Window) (*core.EventList, error) {
	respcache.MarkUncacheable(ctx)
	return r.Service.Events(ctx, f, o, w)
}
