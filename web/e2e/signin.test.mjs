// Real-browser test of the playground's Sign in button, run with plain node
// against a procsvc started with an identity provider for the playground
// (--oidc-issuer, --oidc-playground-client-id):
//
//   PLAYGROUND_URL=http://127.0.0.1:8080 PLAYGROUND_TOKEN=pms_... \
//   PLAYGROUND_ISSUER=http://127.0.0.1:9999 PLAYGROUND_USER=ada PLAYGROUND_PASSWORD=pw \
//   PLAYGROUND_EMAIL=ada@example.com node web/e2e/signin.test.mjs
//
// PLAYGROUND_TOKEN is an admin's pms_ token: the script invites
// PLAYGROUND_EMAIL as a member with it, and writes with it while the
// signed-in person's subscription runs. Through harness.mjs (chromium via
// playwright-core; fails on any request to an origin other than procsvc's
// and the provider's, any CSP violation and any page error) it checks that
// the page's connect-src names the provider's origin; clicks Sign in, fills
// the provider's login form, and comes back to /playground signed in (the
// email shown, the code gone from the address bar, the provider's token in
// sessionStorage and the headers editor, never in localStorage); runs a
// query (data, no errors, as the invited member); runs a subscription over
// the same-origin WebSocket with that token and sees the event of a write;
// signs out (token gone, the Sign in button back). Exits non-zero on any
// failure.
import {
  HEADERS_SEL,
  QUERY_SEL,
  TOKEN_PLACEHOLDER,
  editorValue,
  graphql,
  issuer,
  log,
  main,
  runAndRead,
  runPlaygroundTest,
  setEditor,
  waitFor,
  waitForResult,
} from './harness.mjs';

const user = process.env.PLAYGROUND_USER || '';
const password = process.env.PLAYGROUND_PASSWORD || '';
const email = process.env.PLAYGROUND_EMAIL || '';
const TOKEN_KEY = 'procsvc.playground.token';

const QUERY = `query SignedIn {
  viewer { name role }
  procedures(first: 1) { nodes { id name } }
}
`;

const SUBSCRIPTION = `subscription {
  procedureEvents {
    kind
    procedureId
    procedure {
      name
    }
  }
}
`;

const RENAME = `mutation Rename($id: ID!, $name: String!) {
  updateProcedure(id: $id, input: { name: $name }) { id name }
}`;

// See subscription.test.mjs: the server gives no sign of when it has
// registered a subscription, so the write is repeated until its event shows.
const RENAME_WAIT_MS = 2000;

function frames(list) {
  return list.flatMap((f) => {
    try {
      return [JSON.parse(f)];
    } catch {
      return [];
    }
  });
}

main(async () => {
  if (!issuer || !user || !password || !email) {
    throw new Error('set PLAYGROUND_ISSUER, PLAYGROUND_USER, PLAYGROUND_PASSWORD and PLAYGROUND_EMAIL');
  }
  const memberName = `Signed-in ${email}`;
  await graphql('mutation Invite($input: AddMemberInput!) { addMember(input: $input) { id } }', {
    input: { name: memberName, email, role: 'VIEWER' },
  });
  log(`invited ${email} as a VIEWER`);
  const issuerOrigin = new URL(issuer).origin;

  await runPlaygroundTest(async ({ page, origin, wsOrigin, sockets, csp }) => {
    const connectSrc = /connect-src ([^;]*)/.exec(csp)?.[1] ?? '';
    if (connectSrc !== `'self' ${issuerOrigin}`) throw new Error(`connect-src is ${JSON.stringify(connectSrc)}, want 'self' ${issuerOrigin}`);

    // An answer this tab never asked for (no state kept, or another one)
    // is refused with a reason, and leaves the address bar.
    await page.goto(`${origin}/playground?code=forged&state=forged`, { waitUntil: 'load' });
    const refusal = await page.waitForSelector('.procsvc-sign-in-error');
    if (!/state does not match/.test(await refusal.textContent())) throw new Error(`forged answer: ${await refusal.textContent()}`);
    if (new URL(page.url()).search !== '') throw new Error(`the forged code stayed in the address bar: ${page.url()}`);
    if (await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY)) throw new Error('a token was kept from a forged answer');
    log('an answer with a state this tab did not make is refused');

    // Sign in through the provider's own login page.
    await page.click('button.procsvc-sign-in');
    await page.waitForURL((u) => u.origin === issuerOrigin);
    log(`on the provider's login page: ${page.url()}`);
    await page.fill('input[name="username"]', user);
    await page.fill('input[name="password"]', password);
    await page.click('button[type="submit"]');
    await page.waitForURL((u) => u.origin === origin && u.pathname === '/playground');
    const who = await page.waitForSelector('.procsvc-who');
    if ((await who.textContent()) !== email) throw new Error(`signed in as ${await who.textContent()}, want ${email}`);
    await waitFor(page, 'the code and state to leave the address bar', async () => new URL(page.url()).search === '');
    log(`back on ${page.url()}, signed in as ${email}`);

    const token = await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY);
    if (!token || token.startsWith('pms_')) throw new Error(`sessionStorage holds ${JSON.stringify(token)}, not the provider's token`);
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
    if (stored.includes(token)) throw new Error('the provider token was written to localStorage');
    await waitFor(page, 'the headers editor to carry the token', async () =>
      (await editorValue(page, HEADERS_SEL)).includes(`Bearer ${token}`),
    );

    // A query, as the invited member.
    await setEditor(page, QUERY_SEL, QUERY);
    const answer = await runAndRead(page, 'the signed-in query');
    if (!answer?.data || answer.errors || answer.data.viewer?.name !== memberName) {
      throw new Error(`the signed-in query answered ${JSON.stringify(answer)}`);
    }
    const target = answer.data.procedures.nodes[0];
    if (!target) throw new Error('the workspace has no procedure (serve on an empty database seeds one)');
    log(`query ran as ${answer.data.viewer.name} (${answer.data.viewer.role})`);
    if (process.env.SCREENSHOT) {
      const signedIn = process.env.SCREENSHOT.replace(/\.png$/, '') + '-signed-in.png';
      await page.screenshot({ path: signedIn });
      log(`screenshot saved to ${signedIn}`);
    }

    // A subscription over the same-origin WebSocket with the provider's token.
    await setEditor(page, QUERY_SEL, SUBSCRIPTION);
    await page.click('.graphiql-execute-button');
    const wsURL = `${wsOrigin}/graphql`;
    await waitFor(page, `a WebSocket to ${wsURL} sending subscribe`, async () =>
      sockets.some((s) => s.url === wsURL && frames(s.sent).some((f) => f.type === 'subscribe')),
    );
    const socket = sockets.find((s) => s.url === wsURL);
    const init = frames(socket.sent).find((f) => f.type === 'connection_init');
    if (init?.payload?.authorization !== `Bearer ${token}`) {
      throw new Error(`connection_init did not carry the provider's token: ${JSON.stringify(init)}`);
    }
    const names = [];
    const isEvent = (text) => {
      try {
        const ev = JSON.parse(text)?.data?.procedureEvents;
        return ev?.kind === 'UPDATED' && ev.procedureId === target.id && names.includes(ev.procedure?.name);
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 30000;
    let shown;
    for (let i = 1; !shown; i++) {
      const name = `${target.name} (signed in ${i})`;
      names.push(name);
      await graphql(RENAME, { id: target.id, name });
      shown = await waitForResult(page, 'the UPDATED event', isEvent, RENAME_WAIT_MS).catch((err) => {
        if (Date.now() > deadline) throw err;
        return undefined;
      });
    }
    log(`the subscription shows the event: ${JSON.stringify(JSON.parse(shown).data.procedureEvents)}`);
    await graphql(RENAME, { id: target.id, name: target.name });
    await page.click('.graphiql-execute-button'); // stop it
    await waitFor(page, 'the subscription socket to close', async () => socket.closed);

    // Sign out: the token is gone, and the Sign in button is back.
    await Promise.all([page.waitForEvent('load'), page.click('button.procsvc-sign-out')]);
    await page.waitForSelector('button.procsvc-sign-in');
    if (await page.$('.procsvc-who')) throw new Error('still shown as signed in after signing out');
    const after = await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_KEY);
    if (after) throw new Error(`sessionStorage still holds a token after signing out: ${after}`);
    await page.waitForSelector(HEADERS_SEL, { state: 'visible' });
    const headers = await editorValue(page, HEADERS_SEL);
    if (!headers.includes(TOKEN_PLACEHOLDER) || headers.includes(token)) throw new Error(`headers after signing out: ${headers}`);
    log('signed out: no token kept, the Sign in button is back');
  });
});
