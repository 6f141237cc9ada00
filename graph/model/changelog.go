package model

import (
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/internal/core"
)

// Event is one event of the change log as GraphQL shows it
// (graph/schema.graphqls): the stored row with its changes decoded, made
// once per event by EventOf.
type Event struct {
	ID          uuid.UUID
	Kind        core.EventKind
	Version     int
	CreatedAt   time.Time
	EntityType  EventEntityType
	EntityID    uuid.UUID
	ProcedureID *uuid.UUID
	ProjectID   *uuid.UUID
	Actor       EventActor
	Changes     []core.FieldChange
}

// EventActor is who made a write: the member (resolved through the
// dataloaders) and the token.
type EventActor struct {
	MemberID *uuid.UUID
	TokenID  *uuid.UUID
}

// EventOf is e as GraphQL shows it. Errors: a row whose changes are not
// the JSON the change log writes.
func EventOf(e *ent.Event) (*Event, error) {
	changes, err := core.EventChanges(e)
	if err != nil {
		return nil, err
	}
	kind := core.EventKind(e.Kind)
	return &Event{ID: e.ID, Kind: kind, Version: int(e.Version), CreatedAt: e.CreatedAt,
		EntityType: EventEntityType(strings.ToUpper(kind.EntityType())), EntityID: e.EntityID,
		ProcedureID: e.ProcedureID, ProjectID: e.ProjectID,
		Actor:   EventActor{MemberID: e.ActorMemberID, TokenID: e.ActorTokenID},
		Changes: changes}, nil
}
