package schema

import (
	"context"
	"fmt"
	"time"

	"entgo.io/ent"
	"entgo.io/ent/dialect/sql"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"

	"github.com/procsvc/procsvc/ent/intercept"
	"github.com/procsvc/procsvc/internal/tenancy"
)

// nowUTC is the default of every timestamp: stored times are always UTC.
func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// TimeMixin adds created_at and updated_at.
type TimeMixin struct{ mixin.Schema }

// Fields of the TimeMixin.
func (TimeMixin) Fields() []ent.Field {
	return []ent.Field{
		field.Time("created_at").Default(nowUTC).Immutable(),
		field.Time("updated_at").Default(nowUTC).UpdateDefault(nowUTC),
	}
}

// wherer is implemented by every generated query and mutation.
type wherer interface {
	WhereP(...func(*sql.Selector))
}

// scopeToViewer restricts a query or mutation to the workspace ctx is
// confined to (internal/tenancy), through column. It fails closed: with
// neither a viewer nor the system marker, nothing is read or written.
func scopeToViewer(ctx context.Context, column string, target any) error {
	workspaceID, scoped, err := tenancy.Of(ctx)
	if err != nil || !scoped {
		return err
	}
	w, ok := target.(wherer)
	if !ok {
		return fmt.Errorf("tenancy: %T cannot be scoped", target)
	}
	w.WhereP(tenancy.Where(column, workspaceID))
	return nil
}

// tenantInterceptor scopes every read: lists, counts, exists, edge traversals
// and eager loads all pass through it.
func tenantInterceptor(column string) ent.Interceptor {
	return ent.TraverseFunc(func(ctx context.Context, q ent.Query) error {
		wq, err := intercept.NewQuery(q)
		if err != nil {
			return err
		}
		return scopeToViewer(ctx, column, wq)
	})
}

// TenantMixin marks a table whose rows belong to one workspace. The column is
// declared by each schema's workspace edge; this mixin only enforces it.
type TenantMixin struct{ mixin.Schema }

// Interceptors of the TenantMixin.
func (TenantMixin) Interceptors() []ent.Interceptor {
	return []ent.Interceptor{tenantInterceptor(tenancy.Column)}
}

// Hooks of the TenantMixin: creates are stamped with the viewer's workspace
// (a different one is refused), updates and deletes only match its rows.
func (TenantMixin) Hooks() []ent.Hook {
	return []ent.Hook{func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			workspaceID, scoped, err := tenancy.Of(ctx)
			if err != nil {
				return nil, err
			}
			if !scoped {
				return next.Mutate(ctx, m)
			}
			if m.Op().Is(ent.OpCreate) {
				if got, ok := m.Field(tenancy.Column); ok && got != workspaceID {
					return nil, fmt.Errorf("tenancy: create in workspace %v by viewer of %v", got, workspaceID)
				}
				if err := m.SetField(tenancy.Column, workspaceID); err != nil {
					return nil, err
				}
				return next.Mutate(ctx, m)
			}
			if err := scopeToViewer(ctx, tenancy.Column, m); err != nil {
				return nil, err
			}
			return next.Mutate(ctx, m)
		})
	}}
}
