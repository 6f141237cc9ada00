package loader

import (
	"context"
	"sync"

	"github.com/google/uuid"
	"github.com/graph-gophers/dataloader/v7"
)

// Nested lists (a project's procedures, and the like) are loaded for every
// parent of a page at once. The page's list announces its parents before
// its elements are marshalled (Expect); the first parent's field to ask
// then reads the lists of all of them, with its own arguments, which every
// parent of the list shares, and the others find theirs loaded. A parent
// nobody announced (a node looked up by id) is batched over dataloader's
// window with the other parents asking the same question.
//
// A question is a nested field with its arguments and what it selects (see
// graph's nestedKey): two fields asking the same question share one read.

// nestedBatch is one question's lists, by parent.
type nestedBatch struct {
	// mu is held while the lists are read, so that a parent asking then
	// waits for the read that answers it rather than reading again.
	mu       sync.Mutex
	expected []uuid.UUID
	loaded   map[uuid.UUID]any
	// batched serves parents nobody announced; made on first need.
	batched *dataloader.Loader[uuid.UUID, any]
}

// batch returns the request's batch of question, made on first need.
func (l *Loaders) batch(question string) *nestedBatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nested == nil {
		l.nested = map[string]*nestedBatch{}
	}
	b := l.nested[question]
	if b == nil {
		b = &nestedBatch{loaded: map[uuid.UUID]any{}}
		l.nested[question] = b
	}
	return b
}

// Expect announces that question will be asked of each of parents, so that
// the first to ask reads the lists of all of them.
func Expect(ctx context.Context, question string, parents []uuid.UUID) {
	b := from(ctx).batch(question)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range parents {
		if _, ok := b.loaded[p]; !ok {
			b.expected = append(b.expected, p)
		}
	}
}

// Nested answers question for parent: from what was loaded, else by reading
// the lists of every parent announced and not yet loaded (parent among
// them) in one call of read, else through a batching dataloader. read
// answers every parent it is given.
func Nested[V any](ctx context.Context, question string, parent uuid.UUID,
	read func(context.Context, []uuid.UUID) (map[uuid.UUID]V, error)) (V, error) {
	var zero V
	b := from(ctx).batch(question)
	b.mu.Lock()
	if v, ok := b.loaded[parent]; ok {
		b.mu.Unlock()
		vv, _ := v.(V)
		return vv, nil
	}
	if expected(b.expected, parent) {
		parents := unique(b.expected)
		b.expected = nil
		found, err := read(ctx, parents)
		if err != nil {
			b.mu.Unlock()
			return zero, err
		}
		for k, v := range found {
			b.loaded[k] = v
		}
		v, _ := b.loaded[parent].(V)
		b.mu.Unlock()
		return v, nil
	}
	if b.batched == nil {
		b.batched = dataloader.NewBatchedLoader(func(ctx context.Context, keys []uuid.UUID) []*dataloader.Result[any] {
			found, err := read(ctx, keys)
			out := make([]*dataloader.Result[any], len(keys))
			for i, k := range keys {
				out[i] = &dataloader.Result[any]{Data: found[k], Error: err}
			}
			return out
		})
	}
	batched := b.batched
	b.mu.Unlock()
	v, err := batched.Load(ctx, parent)()
	if err != nil {
		return zero, err
	}
	vv, _ := v.(V)
	return vv, nil
}

func expected(ids []uuid.UUID, id uuid.UUID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// unique is ids without repeats, in their first order.
func unique(ids []uuid.UUID) []uuid.UUID {
	seen := make(map[uuid.UUID]struct{}, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}
