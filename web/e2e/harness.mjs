// Shared by the playground's real-browser tests (playground.test.mjs,
// subscription.test.mjs): launches Debian's chromium (CHROMIUM, default
// /usr/bin/chromium) through playwright-core, opens $PLAYGROUND_URL/playground
// and fails the test on any request or WebSocket to another origin, any
// Content-Security-Policy violation and any uncaught page error. Saves a
// screenshot to $SCREENSHOT when it is set (the Go tests point it into
// their temp dir).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const TIMEOUT_MS = Number(process.env.PLAYGROUND_TIMEOUT_MS || 30000);
export const baseURL = (process.env.PLAYGROUND_URL || '').replace(/\/+$/, '');
export const token = process.env.PLAYGROUND_TOKEN || '';
// issuer is the identity provider the playground signs in with
// (signin.test.mjs): its origin is the one other origin the page may reach.
export const issuer = (process.env.PLAYGROUND_ISSUER || '').replace(/\/+$/, '');
const screenshot = process.env.SCREENSHOT || '';
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

export const TOKEN_PLACEHOLDER = '<paste your token>';
export const HEADERS_SEL = '.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror';
export const QUERY_SEL = '.graphiql-query-editor .CodeMirror';
export const RESULT_SEL = '.graphiql-response .result-window .CodeMirror';

export function log(msg) {
  console.log(`[playground e2e] ${msg}`);
}

export function editorValue(page, sel) {
  return page.$eval(sel, (el) => el.CodeMirror.getValue());
}

// setEditor replaces an editor's text through CodeMirror, as typing would, so
// that GraphiQL's own change handling runs.
export function setEditor(page, sel, text) {
  return page.$eval(sel, (el, t) => el.CodeMirror.setValue(t), text);
}

// setToken puts tok into the headers editor's Authorization value, in place
// of the placeholder or of the token there before.
export async function setToken(page, tok) {
  await page.$eval(
    HEADERS_SEL,
    (el, [t, placeholder]) => {
      const cm = el.CodeMirror;
      const v = cm.getValue();
      cm.setValue(v.includes(placeholder) ? v.replace(placeholder, t) : v.replace(/Bearer [^"]*/, `Bearer ${t}`));
    },
    [tok, TOKEN_PLACEHOLDER],
  );
  const after = await editorValue(page, HEADERS_SEL);
  if (!after.includes(`Bearer ${tok}`)) throw new Error(`token was not set into the headers editor: ${after}`);
}

// waitForResult waits until the result pane's text satisfies check (run
// here, in node, on each look at the pane) and returns that text.
export async function waitForResult(page, what, check, timeout = TIMEOUT_MS) {
  const deadline = Date.now() + timeout;
  let text = '';
  for (;;) {
    text = await editorValue(page, RESULT_SEL).catch(() => '');
    if (check(text)) return text;
    if (Date.now() > deadline) throw new Error(`the result pane never showed ${what} within ${timeout} ms; it shows:\n${text}`);
    await page.waitForTimeout(50);
  }
}

// graphql posts an operation to /graphql over HTTP with the token, as any
// API client would, and returns its data (failing on errors).
export async function graphql(query, variables) {
  const resp = await fetch(`${baseURL}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const text = await resp.text();
  if (resp.status !== 200 || /"errors"\s*:/.test(text)) {
    throw new Error(`POST /graphql answered ${resp.status} with errors (is PLAYGROUND_TOKEN valid?):\n${text}`);
  }
  return JSON.parse(text).data;
}

// runPlaygroundTest opens the playground in a fresh headless chromium, checks
// the page's CSP header and GraphiQL's rendering, and hands the page to body.
// Afterwards it fails on page errors, CSP violations and foreign requests.
// The WebSockets the page opens are passed along, with the frames each sent
// and received (as text), in the order they were opened.
export async function runPlaygroundTest(body) {
  if (!baseURL || !token) {
    throw new Error('set PLAYGROUND_URL (e.g. http://127.0.0.1:8080) and PLAYGROUND_TOKEN');
  }
  const origin = new URL(baseURL).origin;
  const issuerOrigin = issuer ? new URL(issuer).origin : '';
  const wsOrigin = origin.replace(/^http/, 'ws');
  const pageURL = `${baseURL}/playground`;

  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'playground-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });

  const requests = [];
  const foreign = [];
  const cspViolations = [];
  const pageErrors = [];
  const failedRequests = [];
  const sockets = [];
  try {
    // Every request any page of the context makes, including service
    // workers and prefetches, must stay on the playground's origin.
    context.on('request', (req) => {
      const url = req.url();
      requests.push(`${req.method()} ${url}`);
      let reqOrigin;
      try {
        const u = new URL(url);
        if (u.protocol === 'data:' || u.protocol === 'blob:' || u.protocol === 'about:') return;
        reqOrigin = u.origin;
      } catch {
        reqOrigin = '(unparseable)';
      }
      if (reqOrigin !== origin && reqOrigin !== issuerOrigin) foreign.push(url);
    });
    context.on('requestfailed', (req) => failedRequests.push(`${req.url()}: ${req.failure()?.errorText}`));

    // Every page of the context (a test may open another tab) is watched.
    const watch = (p) => {
      p.setDefaultTimeout(TIMEOUT_MS);
      p.on('pageerror', (err) => pageErrors.push(String(err)));
      p.on('console', (msg) => {
        const text = msg.text();
        if (/Content Security Policy|Refused to/i.test(text)) cspViolations.push(text);
      });
      p.on('websocket', (ws) => {
        const s = { url: ws.url(), sent: [], received: [], closed: false };
        sockets.push(s);
        requests.push(`WebSocket ${s.url}`);
        if (new URL(s.url).origin !== wsOrigin) foreign.push(s.url);
        ws.on('framesent', (f) => s.sent.push(String(f.payload)));
        ws.on('framereceived', (f) => s.received.push(String(f.payload)));
        ws.on('close', () => {
          s.closed = true;
        });
      });
    };
    context.on('page', watch);
    await context.exposeFunction('__reportCSP', (v) => cspViolations.push(v));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__reportCSP(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} ${e.sourceFile || ''}:${e.lineNumber || ''}`);
      });
    });
    let page = context.pages()[0]; // a persistent context opens with one
    if (page) watch(page);
    else page = await context.newPage(); // watched through 'page'

    log(`opening ${pageURL}`);
    const resp = await page.goto(pageURL, { waitUntil: 'load' });
    if (!resp || resp.status() !== 200) throw new Error(`GET ${pageURL}: status ${resp?.status()}`);
    const csp = resp.headers()['content-security-policy'] || '';
    if (!/default-src 'self'/.test(csp)) throw new Error(`GET ${pageURL}: no strict Content-Security-Policy (got ${JSON.stringify(csp)})`);

    // GraphiQL renders; the headers editor is open and prefilled.
    await page.waitForSelector('.graphiql-container');
    await page.waitForSelector('.graphiql-execute-button');
    await page.waitForSelector(HEADERS_SEL, { state: 'visible' });
    const headerBefore = await editorValue(page, HEADERS_SEL);
    if (!headerBefore.includes(TOKEN_PLACEHOLDER)) {
      throw new Error(`headers editor is not prefilled with the token placeholder: ${headerBefore}`);
    }

    await body({ page, context, origin, wsOrigin, sockets, csp, requests });

    if (screenshot) {
      await page.waitForTimeout(300); // let the panes settle for the picture
      fs.mkdirSync(path.dirname(screenshot), { recursive: true });
      await page.screenshot({ path: screenshot });
      log(`screenshot saved to ${screenshot}`);
    }

    if (pageErrors.length > 0) throw new Error(`uncaught errors in the page:\n  ${pageErrors.join('\n  ')}`);
    if (cspViolations.length > 0) throw new Error(`Content-Security-Policy violations:\n  ${[...new Set(cspViolations)].join('\n  ')}`);
    if (foreign.length > 0) throw new Error(`the page made requests to other origins:\n  ${foreign.join('\n  ')}`);
    log(`${requests.length} requests, all to ${origin}${issuerOrigin ? ` or the identity provider, ${issuerOrigin}` : ''}`);
  } catch (err) {
    log(`requests made:\n  ${requests.join('\n  ')}`);
    if (failedRequests.length > 0) log(`failed requests:\n  ${failedRequests.join('\n  ')}`);
    if (foreign.length > 0) log(`requests to other origins:\n  ${foreign.join('\n  ')}`);
    if (cspViolations.length > 0) log(`CSP violations:\n  ${cspViolations.join('\n  ')}`);
    for (const s of sockets) log(`WebSocket ${s.url}\n  sent: ${s.sent.join('\n        ')}\n  received: ${s.received.join('\n            ')}`);
    try {
      const p = context.pages()[0];
      if (p && screenshot) {
        await p.screenshot({ path: screenshot });
        log(`failure screenshot saved to ${screenshot}`);
      }
    } catch {
      // best effort
    }
    throw err;
  } finally {
    await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

// main runs one test and sets the exit status.
export function main(test) {
  test().then(
    () => {
      console.log('1 passed, 0 failed');
    },
    (err) => {
      console.error(`[playground e2e] FAIL: ${err && err.stack ? err.stack : err}`);
      console.log('0 passed, 1 failed');
      process.exit(1);
    },
  );
}

// answerOverHTTP posts query to /graphql with tok as an API client would and
// returns the status and parsed body, errors and all.
export async function answerOverHTTP(tok, query = '{ __typename }') {
  const resp = await fetch(`${baseURL}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tok}` },
    body: JSON.stringify({ query }),
  });
  return { status: resp.status, body: JSON.parse(await resp.text()) };
}

// withoutRequestIds is a GraphQL response without its errors' requestIds,
// which differ from one request to the next.
export function withoutRequestIds(body) {
  return JSON.parse(JSON.stringify(body), (key, value) => (key === 'requestId' ? undefined : value));
}

// showPlugin opens a side pane by its sidebar button's title.
export async function showPlugin(page, title) {
  await page.click(`.graphiql-sidebar button[aria-label="Show ${title}"]`);
}

// pluginText is the side pane's text ('' when none is open).
export function pluginText(page) {
  return page.$eval('.graphiql-plugin', (el) => el.textContent).catch(() => '');
}

// parsed is text as JSON, or undefined when it is not JSON.
export function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function sameJSON(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// waitFor polls cond (run here, in node) until it holds.
export async function waitFor(page, what, cond, timeout = TIMEOUT_MS) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(25);
  }
}

// waitForDocs waits until the side pane's text satisfies check.
export async function waitForDocs(page, what, check) {
  await waitFor(page, `the docs pane to show ${what}`, async () => check(await pluginText(page))).catch(async (err) => {
    throw new Error(`${err.message}; it shows: ${(await pluginText(page)).slice(0, 500)}`);
  });
}

// runAndRead runs the query editor's operation and returns the result pane's
// JSON once it holds some.
export async function runAndRead(page, what) {
  await setEditor(page, RESULT_SEL, ''); // not to read the last answer again
  await page.click('.graphiql-execute-button');
  return parsed(await waitForResult(page, what, (t) => parsed(t) !== undefined));
}
