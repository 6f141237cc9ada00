// A small observable value for the playground's own state (the schema and
// why it is missing, the session's token), read from React components with
// useValue. GraphiQL keeps its state in stores of its own, not exported.
import { useSyncExternalStore } from 'react';

export function createValue(initial) {
  let value = initial;
  const listeners = new Set();
  return {
    get: () => value,
    set(next) {
      value = typeof next === 'function' ? next(value) : next;
      for (const l of [...listeners]) l();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export function useValue(v) {
  return useSyncExternalStore(v.subscribe, v.get);
}
