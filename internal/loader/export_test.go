package loader

import (
	"context"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/internal/database"
)

// ReadComments reads the window w of the comments of keys as a request's
// loader does, and returns how many comments it read.
func ReadComments(ctx context.Context, db *database.DB, keys []uuid.UUID, w CommentWindow) (int, error) {
	pages, err := newCommentReader(db).read(ctx, keys, w, 0, &textBudget{bound: 1 << 30})
	n := 0
	for _, p := range pages {
		n += len(p.rows)
	}
	return n, err
}

// ReadWholeComments reads every comment of keys as a request's loader does
// for procedures counted with no more than w takes (readWhole), and
// returns how many comments it read; complete is readWhole's.
func ReadWholeComments(ctx context.Context, db *database.DB, keys []uuid.UUID, w CommentWindow) (n int, complete bool, err error) {
	pages, complete, err := newCommentReader(db).readWhole(ctx, keys, w, 0, &textBudget{bound: 1 << 30})
	for _, p := range pages {
		n += len(p.rows)
	}
	return n, complete, err
}
