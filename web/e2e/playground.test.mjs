// Real-browser test of procsvc's GraphQL playground, run with plain node:
//
//   PLAYGROUND_URL=http://127.0.0.1:8080 PLAYGROUND_TOKEN=procsvc_... \
//     node web/e2e/playground.test.mjs
//
// It drives Debian's chromium (CHROMIUM, default /usr/bin/chromium) through
// playwright-core, opens $PLAYGROUND_URL/playground, fails on any request to
// another origin and on any Content-Security-Policy violation, pastes the token
// into the headers editor, runs the starter query with GraphiQL's execute
// button, waits for the result to show "viewer" and "totalCount", checks that
// the docs explorer got the schema, and saves a screenshot to $SCREENSHOT
// (default /tmp/playground.png). Exits non-zero on any failure.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const TIMEOUT_MS = Number(process.env.PLAYGROUND_TIMEOUT_MS || 30000);
const baseURL = (process.env.PLAYGROUND_URL || '').replace(/\/+$/, '');
const token = process.env.PLAYGROUND_TOKEN || '';
const screenshot = process.env.SCREENSHOT || '/tmp/playground.png';
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

function log(msg) {
  console.log(`[playground e2e] ${msg}`);
}

async function main() {
  if (!baseURL || !token) {
    throw new Error('set PLAYGROUND_URL (e.g. http://127.0.0.1:8080) and PLAYGROUND_TOKEN');
  }
  const origin = new URL(baseURL).origin;
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
      if (reqOrigin !== origin) foreign.push(url);
    });
    context.on('requestfailed', (req) => failedRequests.push(`${req.url()}: ${req.failure()?.errorText}`));

    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(TIMEOUT_MS);
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    page.on('console', (msg) => {
      const text = msg.text();
      if (/Content Security Policy|Refused to/i.test(text)) cspViolations.push(text);
    });
    await page.exposeFunction('__reportCSP', (v) => cspViolations.push(v));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__reportCSP(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} ${e.sourceFile || ''}:${e.lineNumber || ''}`);
      });
    });

    log(`opening ${pageURL}`);
    const resp = await page.goto(pageURL, { waitUntil: 'load' });
    if (!resp || resp.status() !== 200) throw new Error(`GET ${pageURL}: status ${resp?.status()}`);
    const csp = resp.headers()['content-security-policy'] || '';
    if (!/default-src 'self'/.test(csp)) throw new Error(`GET ${pageURL}: no strict Content-Security-Policy (got ${JSON.stringify(csp)})`);

    // GraphiQL renders; the headers editor is open and prefilled.
    await page.waitForSelector('.graphiql-container');
    await page.waitForSelector('.graphiql-execute-button');
    const headersSel = '.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror';
    await page.waitForSelector(headersSel, { state: 'visible' });
    const headerBefore = await page.$eval(headersSel, (el) => el.CodeMirror.getValue());
    if (!headerBefore.includes('<paste your token>')) {
      throw new Error(`headers editor is not prefilled with the token placeholder: ${headerBefore}`);
    }
    const queryBefore = await page.$eval('.graphiql-query-editor .CodeMirror', (el) => el.CodeMirror.getValue());
    for (const want of ['go run ./cmd/procsvc', 'viewer', 'totalCount']) {
      if (!queryBefore.includes(want)) throw new Error(`starter query lacks ${JSON.stringify(want)}`);
    }

    // Paste the token where the placeholder is, as a person would, through
    // the editor (so GraphiQL's own change handling runs).
    await page.$eval(
      headersSel,
      (el, tok) => {
        const cm = el.CodeMirror;
        cm.setValue(cm.getValue().replace('<paste your token>', tok));
      },
      token,
    );
    const headerAfter = await page.$eval(headersSel, (el) => el.CodeMirror.getValue());
    if (!headerAfter.includes(`Bearer ${token}`)) throw new Error(`token was not set into the headers editor: ${headerAfter}`);
    log('token set in the headers editor');

    // Run the starter query with the execute button.
    const graphqlResponse = page.waitForResponse(
      (r) => r.url() === `${origin}/graphql` && r.request().method() === 'POST' && !/IntrospectionQuery/.test(r.request().postData() || ''),
    );
    await page.click('.graphiql-execute-button');
    const gr = await graphqlResponse;
    log(`POST /graphql answered ${gr.status()}`);
    const sentAuth = await gr.request().headerValue('authorization');
    if (sentAuth !== `Bearer ${token}`) throw new Error(`the query was not sent with the token (Authorization: ${sentAuth})`);
    const answer = await gr.text();
    if (gr.status() !== 200 || /"errors"\s*:/.test(answer)) {
      throw new Error(`POST /graphql answered ${gr.status()} with errors (is PLAYGROUND_TOKEN valid?):\n${answer}`);
    }

    const resultSel = '.graphiql-response .result-window .CodeMirror';
    await page.waitForFunction(
      (sel) => {
        const el = document.querySelector(sel);
        const v = el && el.CodeMirror ? el.CodeMirror.getValue() : '';
        return v.includes('"totalCount"') && v.includes('"viewer"');
      },
      resultSel,
      { timeout: TIMEOUT_MS },
    ).catch(async (err) => {
      const got = await page.$eval(resultSel, (el) => el.CodeMirror.getValue()).catch(() => '(no result pane)');
      throw new Error(`result pane never showed "totalCount" and "viewer": ${err.message}\nresult pane:\n${got}`);
    });
    const result = await page.$eval(resultSel, (el) => el.CodeMirror.getValue());
    const parsed = JSON.parse(result);
    if (parsed.errors) throw new Error(`the starter query returned errors:\n${result}`);
    log(`result: viewer=${JSON.stringify(parsed.data.viewer)} totalCount=${parsed.data.procedures.totalCount}`);

    // The docs explorer is fed by introspection, which now has the token.
    await page.click('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]');
    await page.waitForFunction(() => {
      const el = document.querySelector('.graphiql-doc-explorer');
      return el && /Root Types/i.test(el.textContent) && /query/i.test(el.textContent);
    }).catch(async (err) => {
      const got = await page.$eval('.graphiql-plugin', (el) => el.textContent).catch(() => '(no plugin pane)');
      throw new Error(`the docs explorer never showed the schema: ${err.message}\ndocs pane: ${got.slice(0, 500)}`);
    });
    log('docs explorer shows the schema');

    await page.waitForTimeout(300); // let the panes settle for the picture
    fs.mkdirSync(path.dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot });
    log(`screenshot saved to ${screenshot}`);

    if (pageErrors.length > 0) throw new Error(`uncaught errors in the page:\n  ${pageErrors.join('\n  ')}`);
    if (cspViolations.length > 0) throw new Error(`Content-Security-Policy violations:\n  ${[...new Set(cspViolations)].join('\n  ')}`);
    if (foreign.length > 0) throw new Error(`the page made requests to other origins:\n  ${foreign.join('\n  ')}`);
    log(`${requests.length} requests, all to ${origin}`);
  } catch (err) {
    log(`requests made:\n  ${requests.join('\n  ')}`);
    if (failedRequests.length > 0) log(`failed requests:\n  ${failedRequests.join('\n  ')}`);
    if (foreign.length > 0) log(`requests to other origins:\n  ${foreign.join('\n  ')}`);
    try {
      const p = context.pages()[0];
      if (p) {
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

main().then(
  () => {
    console.log('1 passed, 0 failed');
  },
  (err) => {
    console.error(`[playground e2e] FAIL: ${err && err.stack ? err.stack : err}`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  },
);
