package webhooks

import (
	"testing"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
)

// TestClaimOrderReachesEveryEndpoint: with more workspaces than one claim
// reaches (150 of 3 endpoints each, 100 endpoints a claim), successive
// claims reach every endpoint of every workspace, each claim one endpoint
// of as many workspaces as it can before a second of any, and no claim
// more than claimEndpoints; with two workspaces, each goes first in turn.
func TestClaimOrderReachesEveryEndpoint(t *testing.T) {
	const workspaces, each = 150, 3
	var eps []*ent.WebhookEndpoint
	for range workspaces {
		ws := uuid.New()
		for range each {
			eps = append(eps, &ent.WebhookEndpoint{ID: uuid.New(), WorkspaceID: ws})
		}
	}
	d := &Dispatcher{}
	seen := map[uuid.UUID]int{}
	for claim := range 12 {
		picked := 0
		for _, g := range d.claimOrder(eps) {
			if len(g) != 1 {
				t.Fatalf("claim %d took %d endpoints of one workspace while others waited", claim, len(g))
			}
			picked += len(g)
			seen[g[0].ID]++
		}
		if picked != claimEndpoints {
			t.Fatalf("claim %d picked %d endpoints, want %d", claim, picked, claimEndpoints)
		}
	}
	for _, ep := range eps {
		if seen[ep.ID] == 0 {
			t.Fatalf("endpoint %s never reached in 12 claims", ep.ID)
		}
	}

	a, b := uuid.UUID{1}, uuid.UUID{2}
	two := []*ent.WebhookEndpoint{{ID: uuid.New(), WorkspaceID: a}, {ID: uuid.New(), WorkspaceID: a}, {ID: uuid.New(), WorkspaceID: b}}
	firsts := map[uuid.UUID]int{}
	for range 4 {
		order := d.claimOrder(two)
		if len(order) != 2 || len(order[0])+len(order[1]) != 3 {
			t.Fatalf("two workspaces: %d groups", len(order))
		}
		firsts[order[0][0].WorkspaceID]++
	}
	if firsts[a] != 2 || firsts[b] != 2 {
		t.Errorf("in 4 claims, A went first %d times and B %d, want 2 each", firsts[a], firsts[b])
	}
}
