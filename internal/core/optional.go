package core

// Optional is a field of a partial update: unset leaves the stored value
// alone; set with a nil Value clears it (or is refused for a required field).
type Optional[T any] struct {
	Set   bool
	Value *T
}

// Some returns a set Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: &v} }

// Null returns a set Optional that clears the field.
func Null[T any]() Optional[T] { return Optional[T]{Set: true} }

// required returns the value of a set, required field, recording an error when
// it is null. ok is false when the field is unset or null.
func required[T any](val interface{ Add(string, string, ...any) }, field string, o Optional[T]) (v T, ok bool) {
	if !o.Set {
		return v, false
	}
	if o.Value == nil {
		val.Add(field, "cannot be null")
		return v, false
	}
	return *o.Value, true
}

// setOrClear applies a set Optional to an update builder: set with a value,
// clear without one, never both (PostgreSQL refuses two assignments to one
// column in an UPDATE). An unset Optional leaves the column alone.
func setOrClear[T, B any](o Optional[T], set func(T) B, clear func() B) {
	switch {
	case !o.Set:
	case o.Value == nil:
		clear()
	default:
		set(*o.Value)
	}
}
