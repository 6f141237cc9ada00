// Package core is procsvc's business layer: every rule about procedures,
// projects, categories, comments, members and tokens lives here once, and
// both faces (GraphQL resolvers and, through them, REST) call it. It never
// imports a face.
//
// A call checks the viewer's role first (access.go), validates its input
// (validation.go and each entity's file), then writes in one transaction
// that takes the workspace's lock, bumps its version and re-checks the
// acting member (transaction.go), and ends with the write's finish: its
// change-log entry, its tallies and the announcement of what it changed,
// described once and written the same way by every lock path on both
// databases (finish.go).
//
// Tenancy is enforced here too, by one rule (internal/tenancy): ent applies
// it to every query and mutation core builds, and the statements core
// writes past ent's builders (the acting member's re-read, the version bump)
// name the workspace through the same package. Roles, validation, shortIds,
// positions, preconditions and delete rules are checked in this package.
package core
