package core

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/predicate"
	"github.com/procsvc/procsvc/ent/procedure"
	"github.com/procsvc/procsvc/ent/proceduretally"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/ids"
	"github.com/procsvc/procsvc/internal/viewer"
)

// ProjectInput creates a project (Name required) or, with Optional fields
// set, updates one.
type ProjectInput struct {
	Name      Optional[string]
	StartedAt Optional[time.Time]
	DueAt     Optional[time.Time]
}

// ProjectList is a page of projects and the count of all that match.
type ProjectList = List[ent.Project]

// FindProjects lists projects by name.
// Errors: unauthenticated, validation_failed.
func (s *Service) FindProjects(ctx context.Context, f ListFilter, w Window) (*ProjectList, error) {
	return findNamed(ctx, s, "projects", f, w, func(r *ent.Project) uuid.UUID { return r.ID }, func(r *ent.Project) string { return r.Name },
		func(term string, sl *slice) *ent.ProjectQuery {
			q := s.client.Project.Query()
			if term != "" {
				q.Where(project.NameContainsFold(term))
			}
			if sl != nil {
				q.Where(where[predicate.Project](sl)...).Order(orderBy[project.OrderOption](sl))
			}
			return q
		})
}

// Project returns one project. Errors: unauthenticated, not_found.
func (s *Service) Project(ctx context.Context, id string) (*ent.Project, error) {
	return getOne(ctx, ids.KindProject, "project", id, s.client.Project.Get)
}

// validProjectDates checks that dueAt does not precede startedAt.
func validProjectDates(val *apperr.Validation, started, due *time.Time) {
	if started != nil && due != nil && due.Before(*started) {
		val.Add("dueAt", "must not precede startedAt")
	}
}

// CreateProject stores a new project.
// Errors: unauthenticated, forbidden, validation_failed.
func (s *Service) CreateProject(ctx context.Context, in ProjectInput) (*ent.Project, error) {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	var name string
	if in.Name.Value != nil {
		name = *in.Name.Value
	}
	name = text(val, "name", name, MaxTitleLen)
	validProjectDates(val, in.StartedAt.Value, in.DueAt.Value)
	if err := val.Err(); err != nil {
		return nil, err
	}
	return stored(ctx, s, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Project, error) {
		created, err := tx.Project.Create().SetName(name).
			SetNillableStartedAt(utc(in.StartedAt.Value)).
			SetNillableDueAt(utc(in.DueAt.Value)).
			Save(ctx)
		if err != nil {
			return nil, err
		}
		return created, s.finishWith(tx, recordFinish(EventProjectCreated, created.ID, nil, projectFields(created)))
	})
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// UpdateProject changes the fields set in in.
// Errors: unauthenticated, forbidden, not_found, validation_failed,
// precondition_failed.
//
// The project is read inside the write's transaction: its updatedAt, name
// and the dates the body leaves alone (dueAt must not precede startedAt) are
// those as of the workspace lock. Only an invalid body reads it before, to
// answer not_found first as it always has.
func (s *Service) UpdateProject(ctx context.Context, id string, in ProjectInput, conds ...Precondition) (*ent.Project, error) {
	v, pid, err := target(ctx, viewer.RoleMember, ids.KindProject, "project", id)
	if err != nil {
		return nil, err
	}
	in.StartedAt.Value, in.DueAt.Value = utc(in.StartedAt.Value), utc(in.DueAt.Value)
	// validate checks in against p; with p nil, it skips what needs the row.
	var name string
	var hasName bool
	validate := func(p *ent.Project) error {
		val := &apperr.Validation{}
		name, hasName = required(val, "name", in.Name)
		if hasName {
			name = text(val, "name", name, MaxTitleLen)
		}
		started, due := in.StartedAt.Value, in.DueAt.Value
		if p != nil && !in.StartedAt.Set {
			started = p.StartedAt
		}
		if p != nil && !in.DueAt.Set {
			due = p.DueAt
		}
		if p != nil || (in.StartedAt.Set && in.DueAt.Set) {
			validProjectDates(val, started, due)
		}
		return val.Err()
	}
	if validate(nil) != nil {
		p, err := s.Project(ctx, id)
		if err != nil {
			return nil, err
		}
		return nil, validate(p)
	}
	return stored(ctx, s, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Project, error) {
		p, err := tx.Project.Get(ctx, pid)
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("project")
		}
		if err != nil {
			return nil, err
		}
		if err := validate(p); err != nil {
			return nil, err
		}
		if err := checkPreconditions("project", p.UpdatedAt, conds); err != nil {
			return nil, err
		}
		u := tx.Project.UpdateOneID(p.ID).SetUpdatedAt(nextUpdatedAt(p.UpdatedAt, s.now()))
		if hasName && name != p.Name {
			u.SetName(name)
			// Procedures keep a copy of their project's name for sorting.
			if err := tx.Procedure.Update().Where(procedure.ProjectID(p.ID)).SetProjectName(name).Exec(ctx); err != nil {
				return nil, err
			}
		}
		setOrClear(in.StartedAt, u.SetStartedAt, u.ClearStartedAt)
		setOrClear(in.DueAt, u.SetDueAt, u.ClearDueAt)
		updated, err := u.Save(ctx)
		if err != nil {
			return nil, err
		}
		return updated, s.finishWith(tx, recordFinish(EventProjectUpdated, p.ID, projectFields(p), projectFields(updated)))
	})
}

// DeleteProject removes an empty project; one that still has procedures is
// refused and nothing is deleted.
// Errors: unauthenticated, forbidden, not_found, conflict,
// precondition_failed.
func (s *Service) DeleteProject(ctx context.Context, id string, conds ...Precondition) error {
	v, pid, err := target(ctx, viewer.RoleMember, ids.KindProject, "project", id)
	if err != nil {
		return err
	}
	return s.inTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) error {
		if err := recheck(ctx, "project", conds, tx.Project.Get, pid, func(e *ent.Project) time.Time { return e.UpdatedAt }); err != nil {
			return err
		}
		busy, err := tx.Procedure.Query().Where(procedure.ProjectID(pid)).Exist(ctx)
		if err != nil {
			return err
		}
		if busy {
			return apperr.New(apperr.Conflict, "the project still has procedures; move or delete them first")
		}
		n, err := tx.Project.Delete().Where(project.ID(pid)).Exec(ctx)
		if err == nil && n == 0 {
			return apperr.NotFoundf("project")
		}
		if err != nil {
			return err
		}
		// A delete's event names the record without its fields: reading
		// them would cost the write a statement (docs/api.md, "Events").
		return s.finishWith(tx, recordFinish(EventProjectDeleted, pid, nil, nil))
	})
}

// CategoryList is a page of categories and the count of all that match.
type CategoryList = List[ent.Category]

// FindCategories lists categories by name.
// Errors: unauthenticated, validation_failed.
func (s *Service) FindCategories(ctx context.Context, f ListFilter, w Window) (*CategoryList, error) {
	return findNamed(ctx, s, "categories", f, w, func(r *ent.Category) uuid.UUID { return r.ID }, func(r *ent.Category) string { return r.Name },
		func(term string, sl *slice) *ent.CategoryQuery {
			q := s.client.Category.Query()
			if term != "" {
				q.Where(category.NameContainsFold(term))
			}
			if sl != nil {
				q.Where(where[predicate.Category](sl)...).Order(orderBy[category.OrderOption](sl))
			}
			return q
		})
}

// Category returns one category. Errors: unauthenticated, not_found.
func (s *Service) Category(ctx context.Context, id string) (*ent.Category, error) {
	return getOne(ctx, ids.KindCategory, "category", id, s.client.Category.Get)
}

// CreateCategory stores a new category.
// Errors: unauthenticated, forbidden, validation_failed.
func (s *Service) CreateCategory(ctx context.Context, name string) (*ent.Category, error) {
	v, err := require(ctx, viewer.RoleMember)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	name = text(val, "name", name, MaxTitleLen)
	if err := val.Err(); err != nil {
		return nil, err
	}
	return stored(ctx, s, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Category, error) {
		created, err := tx.Category.Create().SetName(name).Save(ctx)
		if err != nil {
			return nil, err
		}
		return created, s.finishWith(tx, recordFinish(EventCategoryCreated, created.ID, nil, categoryFields(created)))
	})
}

// UpdateCategory renames a category when name is set.
// Errors: unauthenticated, forbidden, not_found, validation_failed,
// precondition_failed.
//
// The category is read inside the write's transaction (its updatedAt as of
// the workspace lock); before it only for an invalid body or a no-op.
func (s *Service) UpdateCategory(ctx context.Context, id string, name Optional[string], conds ...Precondition) (*ent.Category, error) {
	v, cid, err := target(ctx, viewer.RoleMember, ids.KindCategory, "category", id)
	if err != nil {
		return nil, err
	}
	val := &apperr.Validation{}
	n, ok := required(val, "name", name)
	if ok {
		n = text(val, "name", n, MaxTitleLen)
	}
	if err := val.Err(); err != nil || (!ok && len(conds) == 0) {
		c, nf := s.Category(ctx, id)
		if nf != nil {
			return nil, nf
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return stored(ctx, s, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) (*ent.Category, error) {
		c, err := tx.Category.Get(ctx, cid)
		if ent.IsNotFound(err) {
			return nil, apperr.NotFoundf("category")
		}
		if err != nil {
			return nil, err
		}
		if err := checkPreconditions("category", c.UpdatedAt, conds); err != nil {
			return nil, err
		}
		u := tx.Category.UpdateOneID(c.ID).SetUpdatedAt(nextUpdatedAt(c.UpdatedAt, s.now()))
		if ok {
			u.SetName(n)
		}
		updated, err := u.Save(ctx)
		if err != nil {
			return nil, err
		}
		return updated, s.finishWith(tx, recordFinish(EventCategoryUpdated, c.ID, categoryFields(c), categoryFields(updated)))
	})
}

// DeleteCategory removes a category; its procedures become uncategorised.
// Errors: unauthenticated, forbidden, not_found, precondition_failed.
func (s *Service) DeleteCategory(ctx context.Context, id string, conds ...Precondition) error {
	v, cid, err := target(ctx, viewer.RoleMember, ids.KindCategory, "category", id)
	if err != nil {
		return err
	}
	return s.inTx(ctx, v, viewer.RoleMember, func(tx *ent.Tx, me *viewer.Viewer) error {
		if err := recheck(ctx, "category", conds, tx.Category.Get, cid, func(e *ent.Category) time.Time { return e.UpdatedAt }); err != nil {
			return err
		}
		if err := tx.Procedure.Update().Where(procedure.CategoryID(cid)).ClearCategoryID().Exec(ctx); err != nil {
			return err
		}
		// Its procedures have left it: its tally (tallies.go) goes with it.
		if _, err := tx.ProcedureTally.Delete().Where(proceduretally.WorkspaceID(v.WorkspaceID),
			proceduretally.Key(parentTally(ParentCategory, cid))).Exec(ctx); err != nil {
			return err
		}
		n, err := tx.Category.Delete().Where(category.ID(cid)).Exec(ctx)
		if err == nil && n == 0 {
			return apperr.NotFoundf("category")
		}
		if err != nil {
			return err
		}
		return s.finishWith(tx, recordFinish(EventCategoryDeleted, cid, nil, nil))
	})
}
