// Where the playground keeps the bearer token: in sessionStorage only, so it
// survives a reload of the tab but not the tab itself (nor another tab, nor
// the next browser session). Never in a cookie (it would travel with every
// request and outlive the session) and never in localStorage, where GraphiQL
// keeps the query, the tabs and the history across sessions: tokenFreeStorage
// is the storage GraphiQL gets, and it takes the token out of whatever
// GraphiQL writes there.

export const TOKEN_PLACEHOLDER = '<paste your token>';

const TOKEN_KEY = 'procsvc.playground.token';

// headersFor is the headers editor's text for token (the placeholder when
// there is none).
export function headersFor(token) {
  return `{"Authorization": "Bearer ${jsonStringBody(token || TOKEN_PLACEHOLDER)}"}`;
}

// jsonStringBody is s as it reads between a JSON string's quotes.
function jsonStringBody(s) {
  return JSON.stringify(s).slice(1, -1);
}

export const DEFAULT_HEADERS = headersFor('');

// authorizationOf is the Authorization value of a headers object, whatever
// its key's case ('' when there is none).
export function authorizationOf(headers) {
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === 'authorization') return String(value);
  }
  return '';
}

// tokenOf is the bearer token in an Authorization value: '' for none, for
// another scheme and for the placeholder (which is no token).
export function tokenOf(authorization) {
  const m = /^\s*Bearer\s+(\S(?:.*\S)?)\s*$/i.exec(authorization ?? '');
  if (!m || m[1] === TOKEN_PLACEHOLDER) return '';
  return m[1];
}

// tokenOfHeadersText is the token in the headers editor's text ('' when the
// text is not a JSON object, or holds no token).
export function tokenOfHeadersText(text) {
  let headers;
  try {
    headers = JSON.parse(text);
  } catch {
    return '';
  }
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) return '';
  return tokenOf(authorizationOf(headers));
}

function session() {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage disabled: the token lasts as long as the page
  }
}

export function loadToken() {
  return session()?.getItem(TOKEN_KEY) ?? '';
}

export function saveToken(token) {
  if (token) session()?.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  session()?.removeItem(TOKEN_KEY);
}

// redactHeadersText puts the placeholder in place of the bearer token in a
// headers editor's text, and restoreHeadersText does the reverse with the
// session's token, so that what GraphiQL stores never holds a token and
// what it reads back (a history entry, say) runs with this session's one.
// Text that is not a JSON object of headers cannot be checked, so it is not
// kept at all.
function redactHeadersText(text) {
  let headers;
  try {
    headers = JSON.parse(text);
  } catch {
    return null;
  }
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) return null;
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() === 'authorization') headers[key] = `Bearer ${TOKEN_PLACEHOLDER}`;
  }
  return JSON.stringify(headers);
}

function restoreHeadersText(text) {
  const token = loadToken();
  if (!token || typeof text !== 'string') return text;
  return text.replace(`Bearer ${TOKEN_PLACEHOLDER}`, () => `Bearer ${jsonStringBody(token)}`);
}

// mapHeaders applies f to every "headers" string in a JSON document (the
// tab state, the history, the favorites) and to a bare headers entry.
function mapHeaders(key, value, f) {
  if (value == null) return value;
  if (key === 'graphiql:headers') return f(value);
  let doc;
  try {
    doc = JSON.parse(value);
  } catch {
    return value; // not JSON: no headers in it
  }
  let changed = false;
  const walk = (node) => {
    if (Array.isArray(node)) {
      node.forEach(walk);
    } else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k === 'headers' && typeof v === 'string') {
          const mapped = f(v);
          if (mapped !== v) {
            node[k] = mapped;
            changed = true;
          }
        } else {
          walk(v);
        }
      }
    }
  };
  walk(doc);
  return changed ? JSON.stringify(doc) : value;
}

// tokenFreeStorage is GraphiQL's storage (the Storage interface it takes as
// its storage prop): localStorage under GraphiQL's "graphiql:" keys, minus
// the token. GraphiQL's history keeps each run's headers, token included,
// whatever shouldPersistHeaders says; this is where that stops.
export function tokenFreeStorage(backing = window.localStorage) {
  const ours = (key) => key.startsWith('graphiql:');
  return {
    getItem: (key) => mapHeaders(key, backing.getItem(key), restoreHeadersText),
    setItem: (key, value) => {
      const redacted = mapHeaders(key, String(value), redactHeadersText);
      if (redacted == null) backing.removeItem(key);
      else backing.setItem(key, redacted);
    },
    removeItem: (key) => backing.removeItem(key),
    get length() {
      let n = 0;
      for (let i = 0; i < backing.length; i++) if (ours(backing.key(i) ?? '')) n++;
      return n;
    },
    clear() {
      const keys = [];
      for (let i = 0; i < backing.length; i++) keys.push(backing.key(i) ?? '');
      for (const key of keys.filter(ours)) backing.removeItem(key);
    },
  };
}
