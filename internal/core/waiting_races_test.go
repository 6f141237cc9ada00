package core_test

// Races of a write that waits for the workspace lock while its member
// changes or the records it references go (see races_test.go for the
// harness).

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/viewer"
)

// write is one core write, performed as ctx.
type write struct {
	name string
	do   func(ctx context.Context) error
}

// memberWrites are the writes a MEMBER may make, on fresh targets each time
// (own is the acting member: their comment is the one edited).
func (f *fixture) memberWrites(t *testing.T, own *ent.Member) []write {
	t.Helper()
	svc := f.svc
	proc := f.newProcedure(t, "target", "TODO", f.project)
	other := f.newProcedure(t, "other", "TODO", f.project)
	emptyProject := f.newProject(t, "empty")
	spareCategory := f.newCategory(t, "spare")
	ownComment, err := f.db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(proc.ID).
		SetAuthorID(own.ID).SetText("own").Save(sys())
	if err != nil {
		t.Fatal(err)
	}
	doomed, err := f.db.Client.Comment.Create().SetWorkspaceID(f.boot.Workspace.ID).SetProcedureID(proc.ID).
		SetAuthorID(own.ID).SetText("to delete").Save(sys())
	if err != nil {
		t.Fatal(err)
	}
	return []write{
		{"CreateProcedure", func(ctx context.Context) error {
			_, err := svc.CreateProcedure(ctx, f.input("new", "TODO", f.project))
			return err
		}},
		{"UpdateProcedure", func(ctx context.Context) error {
			_, err := svc.UpdateProcedure(ctx, proc.ID.String(), core.UpdateProcedureInput{Name: core.Some("renamed")})
			return err
		}},
		{"MoveProcedure", func(ctx context.Context) error {
			_, err := svc.MoveProcedure(ctx, proc.ID.String(), nil, idp(other), nil)
			return err
		}},
		{"DeleteProcedure", func(ctx context.Context) error { return svc.DeleteProcedure(ctx, other.ID.String()) }},
		{"AddComment", func(ctx context.Context) error {
			_, err := svc.AddComment(ctx, proc.ID.String(), "hello")
			return err
		}},
		{"UpdateComment", func(ctx context.Context) error {
			_, err := svc.UpdateComment(ctx, ownComment.ID.String(), "edited")
			return err
		}},
		{"DeleteComment", func(ctx context.Context) error { return svc.DeleteComment(ctx, doomed.ID.String()) }},
		{"CreateProject", func(ctx context.Context) error {
			_, err := svc.CreateProject(ctx, core.ProjectInput{Name: core.Some("new project")})
			return err
		}},
		{"UpdateProject", func(ctx context.Context) error {
			_, err := svc.UpdateProject(ctx, emptyProject.ID.String(), core.ProjectInput{Name: core.Some("renamed")})
			return err
		}},
		{"DeleteProject", func(ctx context.Context) error { return svc.DeleteProject(ctx, emptyProject.ID.String()) }},
		{"CreateCategory", func(ctx context.Context) error {
			_, err := svc.CreateCategory(ctx, "new category")
			return err
		}},
		{"UpdateCategory", func(ctx context.Context) error {
			_, err := svc.UpdateCategory(ctx, spareCategory.ID.String(), core.Some("renamed"))
			return err
		}},
		{"DeleteCategory", func(ctx context.Context) error { return svc.DeleteCategory(ctx, spareCategory.ID.String()) }},
	}
}

// adminWrites are the writes only an ADMIN may make.
func (f *fixture) adminWrites(t *testing.T) []write {
	t.Helper()
	svc := f.svc
	_, target := f.as(t, viewer.RoleMember)
	_, doomed := f.as(t, viewer.RoleMember)
	tok, _, err := svc.CreateToken(f.admin, core.TokenInput{MemberID: target.ID.String(), Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's comment: only an admin may edit it.
	proc := f.newProcedure(t, "commented", "TODO", f.project)
	theirs, err := svc.AddComment(f.admin, proc.ID.String(), "the first admin's")
	if err != nil {
		t.Fatal(err)
	}
	return []write{
		{"AddMember", func(ctx context.Context) error {
			_, err := svc.AddMember(ctx, core.MemberInput{Name: core.Some("new"), Email: core.Some(uuid.NewString() + "@example.com")})
			return err
		}},
		{"UpdateMember", func(ctx context.Context) error {
			_, err := svc.UpdateMember(ctx, target.ID.String(), core.MemberInput{Role: core.Some("VIEWER")})
			return err
		}},
		{"RemoveMember", func(ctx context.Context) error {
			_, err := svc.RemoveMember(ctx, doomed.ID.String())
			return err
		}},
		{"CreateToken", func(ctx context.Context) error {
			_, _, err := svc.CreateToken(ctx, core.TokenInput{MemberID: target.ID.String(), Name: "new"})
			return err
		}},
		{"RevokeToken", func(ctx context.Context) error {
			_, err := svc.RevokeToken(ctx, tok.ID.String())
			return err
		}},
		{"UpdateComment of another member", func(ctx context.Context) error {
			_, err := svc.UpdateComment(ctx, theirs.ID.String(), "edited by an admin")
			return err
		}},
	}
}

// TestActingMemberChangedWhileWaiting: the acting member's membership, role
// and token are checked as of the workspace lock. Each write's own checks
// pass before it waits; the change then commits; the write must be refused
// and write nothing.
func TestActingMemberChangedWhileWaiting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := hooked(t, db, "WAIT")
		changes := []struct {
			name string
			role viewer.Role
			// change is committed by an admin while the write waits.
			change func(m *ent.Member, tok *ent.Token) error
			want   apperr.Code
		}{
			{"removed member", viewer.RoleMember, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.RemoveMember(f.admin, m.ID.String())
				return err
			}, apperr.Disconnected},
			{"member demoted to viewer", viewer.RoleMember, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.UpdateMember(f.admin, m.ID.String(), core.MemberInput{Role: core.Some("VIEWER")})
				return err
			}, apperr.Forbidden},
			{"revoked token", viewer.RoleMember, func(_ *ent.Member, tok *ent.Token) error {
				_, err := f.svc.RevokeToken(f.admin, tok.ID.String())
				return err
			}, apperr.Disconnected},
			{"removed admin", viewer.RoleAdmin, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.RemoveMember(f.admin, m.ID.String())
				return err
			}, apperr.Disconnected},
			{"admin demoted to member", viewer.RoleAdmin, func(m *ent.Member, _ *ent.Token) error {
				_, err := f.svc.UpdateMember(f.admin, m.ID.String(), core.MemberInput{Role: core.Some("MEMBER")})
				return err
			}, apperr.Forbidden},
		}
		for _, ch := range changes {
			t.Run(ch.name, func(t *testing.T) {
				// writes builds the writes, on fresh targets, for actor m.
				writes := func(m *ent.Member) []write { return f.memberWrites(t, m) }
				if ch.role == viewer.RoleAdmin {
					writes = func(*ent.Member) []write { return f.adminWrites(t) }
				}
				for i, w := range writes(f.boot.Admin) {
					t.Run(w.name, func(t *testing.T) {
						// A fresh actor, with a token, per write: the change
						// cannot be undone.
						ctx, m := f.as(t, ch.role)
						tok, _, err := f.svc.CreateToken(f.admin, core.TokenInput{MemberID: m.ID.String(), Name: "acting"})
						if err != nil {
							t.Fatal(err)
						}
						v := *viewer.FromContext(ctx)
						v.TokenID = tok.ID
						ctx = viewer.NewContext(context.Background(), &v)
						w := writes(m)[i]
						var changeErr error
						ctx = interleaved(ctx, func() { changeErr = ch.change(m, tok) })
						before := f.version(t)
						err = w.do(ctx)
						if changeErr != nil {
							t.Fatalf("concurrent change: %v", changeErr)
						}
						wantCode(t, err, ch.want)
						if ch.want == apperr.Disconnected {
							var ae *apperr.Error
							if errors.As(err, &ae) && ae.Message != apperr.DisconnectedMessage {
								t.Fatalf("message %q; want %q", ae.Message, apperr.DisconnectedMessage)
							}
						}
						if got := f.version(t); got != before+1 {
							t.Fatalf("workspace version moved by %d; want 1 (the change only: the write must not commit)", got-before)
						}
					})
				}
			})
		}
	})
}

// generatorFunc adapts a function to core.Generator.
type generatorFunc func(ctx context.Context, req core.GenerateRequest) (string, error)

func (g generatorFunc) Generate(ctx context.Context, req core.GenerateRequest) (string, error) {
	return g(ctx, req)
}

// TestReferencesGoneWhileWaiting: a record a write references, or writes
// to, is deleted (a doer removed) after the write's own early checks and
// before its transaction. The write must answer exactly what it answers
// when run after the change (validation_failed naming the field, or
// not_found), never a bare conflict, never store a removed doer, and write
// nothing.
func TestReferencesGoneWhileWaiting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		// onGenerate, when set, runs inside content generation: between
		// CreateProcedure's early reference check and its transaction.
		var onGenerate func()
		f := hooked(t, db, "GONE", core.WithGenerator(generatorFunc(func(ctx context.Context, req core.GenerateRequest) (string, error) {
			if onGenerate != nil {
				onGenerate()
			}
			return "generated", nil
		})))
		svc := f.svc
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("concurrent change: %v", err)
			}
		}
		deleteCategory := func(c *ent.Category) func() {
			return func() { must(svc.DeleteCategory(f.admin, c.ID.String())) }
		}
		deleteProject := func(p *ent.Project) func() {
			return func() { must(svc.DeleteProject(f.admin, p.ID.String())) }
		}
		deleteProcedure := func(p *ent.Procedure) func() {
			return func() { must(svc.DeleteProcedure(f.admin, p.ID.String())) }
		}
		removeMember := func(m *ent.Member) func() {
			return func() {
				_, err := svc.RemoveMember(f.admin, m.ID.String())
				must(err)
			}
		}

		type scenario struct {
			// write is run twice: interleaved with change, then again after it.
			write  func(ctx context.Context) error
			change func()
			want   apperr.Code
			field  string // for validation_failed
			// viaGenerator commits the change during content generation
			// instead of at the lock.
			viaGenerator bool
		}
		scenarios := map[string]func(t *testing.T) scenario{
			"CreateProcedure, category deleted": func(t *testing.T) scenario {
				c := f.newCategory(t, "doomed")
				in := f.input("new", "TODO", f.project)
				in.CategoryID = c.ID.String()
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: deleteCategory(c), want: apperr.ValidationFailed, field: "categoryId"}
			},
			"CreateProcedure, doer removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				in := f.input("new", "TODO", f.project)
				in.DoerID = m.ID.String()
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: removeMember(m), want: apperr.ValidationFailed, field: "doerId"}
			},
			"CreateProcedure, project deleted": func(t *testing.T) scenario {
				p := f.newProject(t, "doomed")
				in := f.input("new", "TODO", p)
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: deleteProject(p), want: apperr.ValidationFailed, field: "projectId"}
			},
			"CreateProcedure with generation, category deleted while generating": func(t *testing.T) scenario {
				c := f.newCategory(t, "doomed")
				in := f.input("new", "TODO", f.project)
				in.CategoryID = c.ID.String()
				in.GenerateProcedure = true
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: deleteCategory(c), want: apperr.ValidationFailed, field: "categoryId", viaGenerator: true}
			},
			"CreateProcedure with generation, doer removed while generating": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				in := f.input("new", "TODO", f.project)
				in.DoerID = m.ID.String()
				in.GenerateProcedure = true
				return scenario{write: func(ctx context.Context) error { _, err := svc.CreateProcedure(ctx, in); return err },
					change: removeMember(m), want: apperr.ValidationFailed, field: "doerId", viaGenerator: true}
			},
			"UpdateProcedure, category deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				c := f.newCategory(t, "doomed")
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{CategoryID: core.Some(c.ID.String())})
					return err
				}, change: deleteCategory(c), want: apperr.ValidationFailed, field: "categoryId"}
			},
			"UpdateProcedure, doer removed": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{DoerID: core.Some(m.ID.String())})
					return err
				}, change: removeMember(m), want: apperr.ValidationFailed, field: "doerId"}
			},
			"UpdateProcedure, project deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				target := f.newProject(t, "doomed")
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ID.String(), core.UpdateProcedureInput{ProjectID: core.Some(target.ID.String())})
					return err
				}, change: deleteProject(target), want: apperr.ValidationFailed, field: "projectId"}
			},
			"UpdateProcedure, procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateProcedure(ctx, p.ShortID, core.UpdateProcedureInput{Name: core.Some("x"), State: core.Some("WAITING")})
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"MoveProcedure, procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.MoveProcedure(ctx, p.ID.String(), strp("WAITING"), nil, nil)
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"AddComment, procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.AddComment(ctx, p.ID.String(), "hello")
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"UpdateComment, its procedure deleted": func(t *testing.T) scenario {
				p := f.newProcedure(t, "p", "TODO", f.project)
				c, err := svc.AddComment(f.admin, p.ID.String(), "hello")
				if err != nil {
					t.Fatal(err)
				}
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateComment(ctx, c.ID.String(), "edited")
					return err
				}, change: deleteProcedure(p), want: apperr.NotFound}
			},
			"CreateToken, member removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, _, err := svc.CreateToken(ctx, core.TokenInput{MemberID: m.ID.String(), Name: "late"})
					return err
				}, change: removeMember(m), want: apperr.ValidationFailed, field: "memberId"}
			},
			"UpdateMember, member removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.UpdateMember(ctx, m.ID.String(), core.MemberInput{Role: core.Some("ADMIN")})
					return err
				}, change: removeMember(m), want: apperr.NotFound}
			},
			"RemoveMember, member removed": func(t *testing.T) scenario {
				_, m := f.as(t, viewer.RoleMember)
				return scenario{write: func(ctx context.Context) error {
					_, err := svc.RemoveMember(ctx, m.ID.String())
					return err
				}, change: removeMember(m), want: apperr.NotFound}
			},
		}
		names := make([]string, 0, len(scenarios))
		for name := range scenarios {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				sc := scenarios[name](t)
				ctx := f.admin
				if sc.viaGenerator {
					onGenerate = sc.change
					defer func() { onGenerate = nil }()
				} else {
					ctx = interleaved(f.admin, sc.change)
				}
				before := f.version(t)
				err := sc.write(ctx)
				onGenerate = nil
				wantCode(t, err, sc.want)
				if sc.field != "" {
					if fs := fieldsOf(err); !slices.Equal(fs, []string{sc.field}) {
						t.Fatalf("fields = %v; want [%s] (%v)", fs, sc.field, err)
					}
				}
				if got := f.version(t); got != before+1 {
					t.Fatalf("workspace version moved by %d; want 1 (the change only: the write must not commit)", got-before)
				}
				// The same write, run after the change: the same answer.
				sameAnswer(t, err, sc.write(f.admin))
			})
		}
	})
}
