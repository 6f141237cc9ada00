// Package limits is the one table of bounds on what procsvc stores: the ent
// schema enforces them on every write (ent/schema), and the core validates
// input against them and names them in its messages (internal/core).
//
// It imports nothing of procsvc, so that both can depend on it.
package limits

import "regexp"

// Bounds of free-text fields, in characters (not bytes).
const (
	// Name bounds a procedure's name.
	Name = 500
	// Title bounds the other names (workspace, project, category, member,
	// token), a procedure's captureId and a search term.
	Title = 200
	// Content bounds a procedure's content.
	Content = 200_000
	// Comment bounds a comment's text.
	Comment = 20_000
	// Email bounds a member's email address (RFC 5321's 320).
	Email = 320
)

// A procedure holds any number of comments: what is bounded is what one
// read shows of them, never what a team may store.

// CommentPage is the most of a procedure's comments one view of them
// shows: a page of GraphQL's Procedure.comments (first or last) or of
// REST's GET /procedures/{id}/comments (core.MaxCommentPageSize is this).
const CommentPage = 100

// EmbeddedComments is how many of a procedure's comments, its newest, a
// REST procedure embeds; GET /procedures/{id}/comments pages through all
// of them (GraphQL: Procedure.comments, a connection).
const EmbeddedComments = 20

// ResponseBytes is the default bound on the bytes of one response
// (--max-response-mb), and the least one may set: a procedure with the
// longest content and a page (CommentPage) of the longest comments renders
// in under 14 MB even with every character escaped (\u00XX, 6 bytes), so a
// response of one record showing one page of its comments, a write's
// answer above all, always fits, however many comments the procedure
// holds.
const ResponseBytes = 16 << 20

// keyLength is how many letters a workspace key has: 2 to 10.
const keyLength = `{2,10}`

// WorkspaceKey is the form of a workspace key, the prefix of its
// procedures' shortIds: 2 to 10 upper-case ASCII letters.
var WorkspaceKey = regexp.MustCompile(`^[A-Z]` + keyLength + `$`)

// ShortID is the form of a procedure's shortId as a client may send it: its
// workspace key in either case, "-" and the procedure's number (at most 18
// digits, so that it fits an int64).
var ShortID = regexp.MustCompile(`^[A-Za-z]` + keyLength + `-[0-9]{1,18}$`)
