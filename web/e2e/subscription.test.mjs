// Real-browser test of a GraphQL subscription in procsvc's playground, run
// with plain node against a procsvc that serves subscriptions:
//
//   PLAYGROUND_URL=http://127.0.0.1:8080 PLAYGROUND_TOKEN=pms_... \
//     node web/e2e/subscription.test.mjs
//
// Through harness.mjs (chromium via playwright-core; fails on any request or
// WebSocket to another origin, CSP violation or page error) it pastes the
// token into the headers editor, runs a procedureEvents subscription with
// GraphiQL's execute button, and checks that it went over a same-origin
// WebSocket (graphql-transport-ws) whose connection_init carried the token.
// Then it renames a procedure over HTTP, as another client would, and waits
// for the UPDATED event with the new name in the result pane. Last, it stops
// the subscription, puts another, invalid token into the headers editor and
// runs it again: the new connection must carry the new token, and procsvc's
// refusal must show in the result pane without reconnection attempts, as
// what HTTP answers to that token. Exits non-zero on any failure.
import {
  QUERY_SEL,
  answerOverHTTP,
  graphql,
  log,
  main,
  runPlaygroundTest,
  setEditor,
  setToken,
  token,
  waitForResult,
  withoutRequestIds,
} from './harness.mjs';

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

// How long one rename waits for its event before renaming again: the server
// gives no sign of when it has registered the subscription, so an early
// rename can commit before it and is then, rightly, not delivered.
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

async function until(page, what, cond) {
  const deadline = Date.now() + 30000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(25);
  }
}

main(() =>
  runPlaygroundTest(async ({ page, wsOrigin, sockets }) => {
    await setToken(page, token);
    const { procedures } = await graphql('{ procedures(first: 1) { nodes { id name } } }');
    const target = procedures.nodes[0];
    if (!target) throw new Error('the workspace has no procedure to rename (serve on an empty database seeds one)');
    log(`will rename procedure ${target.id} (${JSON.stringify(target.name)})`);

    // Run at once, as a paste then Ctrl-Enter would: before GraphiQL has
    // re-read the editor's operations (it still names the starter query's).
    await setEditor(page, QUERY_SEL, SUBSCRIPTION);
    await page.click('.graphiql-execute-button');

    const wsURL = `${wsOrigin}/graphql`;
    await until(page, `a WebSocket to ${wsURL} sending subscribe`, () =>
      sockets.some((s) => s.url === wsURL && frames(s.sent).some((f) => f.type === 'subscribe')),
    );
    const socket = sockets.find((s) => s.url === wsURL);
    const init = frames(socket.sent).find((f) => f.type === 'connection_init');
    if (init?.payload?.authorization !== `Bearer ${token}`) {
      throw new Error(`connection_init did not carry the token: ${JSON.stringify(init)}`);
    }
    if (!frames(socket.received).some((f) => f.type === 'connection_ack')) {
      throw new Error(`the server did not acknowledge the connection: ${socket.received.join(' ')}`);
    }
    log(`subscribed over ${wsURL} (graphql-transport-ws, token in connection_init)`);

    // Rename until the event shows; see RENAME_WAIT_MS.
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
      const name = `${target.name} (live ${i})`;
      names.push(name);
      await graphql(RENAME, { id: target.id, name });
      shown = await waitForResult(page, 'the UPDATED event', isEvent, RENAME_WAIT_MS).catch((err) => {
        if (Date.now() > deadline) throw err;
        return undefined;
      });
    }
    log(`the result pane shows the event: ${JSON.stringify(JSON.parse(shown).data.procedureEvents)}`);
    await graphql(RENAME, { id: target.id, name: target.name });

    // Stop it; another token must reach the server on the next subscription.
    await page.click('.graphiql-execute-button');
    await until(page, 'the subscription socket to close', () => socket.closed);
    // The playground re-introspects with a changed token, and that fails
    // with this one: let it, so that its error is not what the pane shows.
    const otherToken = 'pms_not_a_real_token';
    const introspected = page.waitForResponse((r) => /IntrospectionQuery/.test(r.request().postData() || ''));
    await setToken(page, otherToken);
    await introspected;
    const before = sockets.length;
    await page.click('.graphiql-execute-button');
    await until(page, 'a new WebSocket sending connection_init', () =>
      sockets.slice(before).some((s) => frames(s.sent).some((f) => f.type === 'connection_init')),
    );
    const again = frames(sockets.slice(before).find((s) => frames(s.sent).some((f) => f.type === 'connection_init')).sent).find(
      (f) => f.type === 'connection_init',
    );
    if (again.payload?.authorization !== `Bearer ${otherToken}`) {
      throw new Error(`after the token changed, connection_init carried ${JSON.stringify(again.payload)}`);
    }
    log('a changed token reconnects with the new token');
    // procsvc refuses it (close 4403); the pane says so at once, with no
    // reconnection attempts first, in the words HTTP uses for that token.
    const overHTTP = JSON.stringify(withoutRequestIds((await answerOverHTTP(otherToken)).body));
    await waitForResult(page, `the refusal of the other token, as HTTP words it (${overHTTP})`, (text) => {
      try {
        return JSON.stringify(withoutRequestIds(JSON.parse(text))) === overHTTP;
      } catch {
        return false;
      }
    });
    if (sockets.length !== before + 1) throw new Error(`the refused token was retried: ${sockets.length - before} connections`);
    log('the refused token shows as an error without retries');
  }),
);
