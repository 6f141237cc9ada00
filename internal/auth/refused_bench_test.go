package auth_test

import (
	"context"
	"testing"

	"github.com/procsvc/procsvc/internal/apperr"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/dbtest"
)

// BenchmarkRefusedFlood weighs the refused secrets (docs/caching.md): a
// client sending one revoked token again and again, with the cache
// (state=on: one lookup, then none) and without it (state=off: a lookup
// each time). stmts/op is the lookups a refusal costs.
func BenchmarkRefusedFlood(b *testing.B) {
	for _, state := range []string{"on", "off"} {
		b.Run("state="+state, func(b *testing.B) {
			db := dbtest.Open(b, "sqlite")
			svc := core.New(db.Client)
			ctx := context.Background()
			boot, err := svc.CreateWorkspace(ctx, core.NewWorkspace{Name: "Flood", Key: "FLD", AdminName: "A", AdminEmail: "a@fld.example"})
			if err != nil {
				b.Fatal(err)
			}
			admin, err := svc.ActAsAdmin(ctx, boot.Workspace.ID.String())
			if err != nil {
				b.Fatal(err)
			}
			tok, secret, err := svc.CreateToken(admin, core.TokenInput{Name: "revoked"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := svc.RevokeToken(admin, tok.ID.String()); err != nil {
				b.Fatal(err)
			}
			var opts []auth.Option
			if state == "off" {
				opts = append(opts, auth.WithoutRefusedSecrets())
			}
			a := auth.New(db, opts...)
			start := db.Statements()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(ctx, "Bearer "+secret); apperr.From(err) == nil || apperr.From(err).Code != apperr.Disconnected {
					b.Fatalf("a revoked token: %v", err)
				}
			}
			b.ReportMetric(float64(db.Statements()-start)/float64(b.N), "stmts/op")
		})
	}
}
