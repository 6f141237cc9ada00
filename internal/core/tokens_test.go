package core_test

import (
	"slices"
	"testing"
	"time"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/auth"
	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/database"
	"github.com/procsvc/procsvc/internal/dbtest"
	"github.com/procsvc/procsvc/internal/ids"
)

// TestTokensNewestFirst pins the order of the token list: newest first
// (createdAt descending), ties broken by id, descending too.
func TestTokensNewestFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *database.DB) {
		f := setup(t, db, "TOK")
		want := []string{f.boot.Token.ID.String()}
		for _, name := range []string{"first", "second", "third"} {
			tk, _, err := f.svc.CreateToken(f.admin, core.TokenInput{Name: name})
			if err != nil {
				t.Fatalf("CreateToken %s: %v", name, err)
			}
			want = append(want, tk.ID.String())
		}
		// Two tokens created in the same instant, later than the others:
		// the one with the greater id comes first.
		same := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
		var tied []string
		for range 2 {
			_, hash := auth.NewSecret()
			tk, err := db.Client.Token.Create().SetID(ids.New(ids.KindToken)).SetWorkspaceID(f.boot.Workspace.ID).
				SetMemberID(f.boot.Admin.ID).SetName("tied").SetSecretHash(hash).SetCreatedAt(same).Save(sys())
			if err != nil {
				t.Fatalf("create tied token: %v", err)
			}
			tied = append(tied, tk.ID.String())
		}
		slices.Sort(tied)
		want = append(want, tied...)
		slices.Reverse(want)

		got, err := f.svc.Tokens(f.admin)
		if err != nil {
			t.Fatalf("Tokens: %v", err)
		}
		if order := tokenIDs(got); !slices.Equal(order, want) {
			t.Fatalf("Tokens listed\n%v\nwant newest first\n%v", order, want)
		}
	})
}

func tokenIDs(ts []*ent.Token) []string {
	out := make([]string, len(ts))
	for i, tk := range ts {
		out[i] = tk.ID.String()
	}
	return out
}
