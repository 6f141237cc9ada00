// Bundles the playground into ../internal/playground/dist: index.html plus
// content-hashed playground-<hash>.js / .css and the third-party licenses.
// Everything the page needs is in those files; nothing is loaded from another
// origin at run time. Run through build.sh (npm ci + this) or `npm run build`.
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(here, '../internal/playground/dist');
const stageDir = path.join(here, '.build');

// graphql-ws's main entry is its client and its server; @graphiql/toolkit
// imports it whole (dynamically, for its subscriptionUrl option, which the
// playground does not use). Point that import at the client the playground
// imports, so that no server code is bundled.
const graphqlWSClientOnly = {
  name: 'graphql-ws-client-only',
  setup(build) {
    build.onResolve({ filter: /^graphql-ws$/ }, (args) =>
      build.resolve('graphql-ws/client', { kind: args.kind, resolveDir: args.resolveDir }),
    );
  },
};

// graphiql-explorer (inside @graphiql/plugin-explorer) is CommonJS and
// require()s graphql. A package that is require()d anywhere is bundled from
// its CommonJS entry for every importer (esbuild's guard against two copies),
// and graphql's CommonJS entry cannot be tree-shaken: the bundle would carry
// all of graphql (about 120 KB more). Instead each such require() gets a
// module re-exporting, from graphql's ES module, exactly the names the
// requiring file reads of it; a file whose uses cannot be read that way
// fails the build rather than get a partial graphql.
const graphqlRequiredAsESM = {
  name: 'graphql-required-as-esm',
  setup(build) {
    build.onResolve({ filter: /^graphql$/ }, (args) =>
      args.kind === 'require-call' ? { path: args.importer, namespace: 'graphql-names' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'graphql-names' }, (args) => {
      const src = fs.readFileSync(args.path, 'utf8');
      const vars = [...src.matchAll(/\b(?:var|let|const)\s+([A-Za-z_$][\w$]*)\s*=\s*require\(\s*['"]graphql['"]\s*\)/g)].map((m) => m[1]);
      const requires = [...src.matchAll(/require\(\s*['"]graphql['"]\s*\)/g)].length;
      if (vars.length === 0 || vars.length !== requires) {
        return { errors: [{ text: `${args.path}: cannot tell which graphql names it uses (teach build.mjs's graphql-required-as-esm)` }] };
      }
      const names = new Set();
      for (const v of vars) {
        const uses = [...src.matchAll(new RegExp(`(?<![\\w$.])${v.replace(/\$/g, '\\$')}\\b(.?)([\\w$]*)`, 'g'))];
        for (const m of uses) {
          if (m[1] === '.') names.add(m[2]);
          else if (!/^\s*=\s*require/.test(src.slice(m.index + v.length))) {
            return { errors: [{ text: `${args.path}: uses ${v} other than as ${v}.name (teach build.mjs's graphql-required-as-esm)` }] };
          }
        }
      }
      return { contents: `export { ${[...names].sort().join(', ')} } from 'graphql';\n`, resolveDir: path.dirname(args.path), loader: 'js' };
    });
  },
};

fs.rmSync(stageDir, { recursive: true, force: true });
const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { playground: 'src/main.jsx' },
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  minify: true,
  sourcemap: false,
  legalComments: 'none', // collected into licenses.txt instead
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  // Fonts and images are inlined so that the page needs no extra requests.
  loader: {
    '.woff': 'dataurl',
    '.woff2': 'dataurl',
    '.ttf': 'dataurl',
    '.svg': 'dataurl',
    '.png': 'dataurl',
  },
  outdir: stageDir,
  entryNames: '[name]',
  metafile: true,
  write: true,
  logLevel: 'warning',
  plugins: [graphqlWSClientOnly, graphqlRequiredAsESM],
});

const hashed = {};
for (const ext of ['js', 'css']) {
  const src = path.join(stageDir, `playground.${ext}`);
  const body = fs.readFileSync(src);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  hashed[ext] = { name: `playground-${hash}.${ext}`, body };
}

// Third-party licenses of every package that went into the bundle.
const pkgDirs = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  if (input.startsWith('graphql-names:')) continue; // made up by graphqlRequiredAsESM
  const m = input.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//);
  if (m) pkgDirs.add(m[1]);
}
let licenses =
  'Third-party software bundled into the procsvc GraphQL playground\n' +
  '================================================================\n';
for (const dir of [...pkgDirs].sort()) {
  const pkg = JSON.parse(fs.readFileSync(path.join(here, dir, 'package.json'), 'utf8'));
  const files = fs
    .readdirSync(path.join(here, dir))
    .filter((f) => /^(licen[cs]e|copying|notice)(\.|$)/i.test(f))
    .sort();
  licenses += `\n\n${pkg.name}@${pkg.version} (${pkg.license ?? 'see below'})\n${'-'.repeat(72)}\n`;
  for (const f of files) licenses += fs.readFileSync(path.join(here, dir, f), 'utf8').trim() + '\n';
  if (files.length === 0) licenses += `License: ${pkg.license ?? 'unknown'} (no license file shipped)\n`;
}

const html = fs
  .readFileSync(path.join(here, 'src/index.html'), 'utf8')
  .replace('%CSS%', hashed.css.name)
  .replace('%JS%', hashed.js.name);

// Replace dist wholesale so that stale hashed files never linger.
fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'index.html'), html);
fs.writeFileSync(path.join(outDir, hashed.js.name), hashed.js.body);
fs.writeFileSync(path.join(outDir, hashed.css.name), hashed.css.body);
fs.writeFileSync(path.join(outDir, 'licenses.txt'), licenses);
fs.rmSync(stageDir, { recursive: true, force: true });

// Guard: no asset may load from another origin. The JS legitimately
// *mentions* URLs (docs links, XML namespaces, React's error decoder); what
// must never appear is a fetchable reference to one.
const problems = [];
const css = hashed.css.body.toString('utf8');
for (const m of css.matchAll(/url\(\s*['"]?([^'")\s]+)/g)) {
  if (!m[1].startsWith('data:')) problems.push(`css url(${m[1].slice(0, 80)})`);
}
for (const m of css.matchAll(/@import\s+[^;]+/g)) problems.push(`css ${m[0].slice(0, 80)}`);
for (const m of html.matchAll(/\b(?:src|href)\s*=\s*"([^"]*)"/g)) {
  if (!m[1].startsWith('/playground/') && !m[1].startsWith('data:')) problems.push(`html ref ${m[1]}`);
}
const js = hashed.js.body.toString('utf8');
for (const re of [
  /\bimport\(\s*["'`](?:https?:)?\/\//g,
  /\bimportScripts\(/g,
  /\bnew\s+(?:Shared)?Worker\(/g,
  /fonts\.(?:googleapis|gstatic)\.com/g,
  /\b(?:unpkg\.com|cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com|esm\.sh)\b/g,
]) {
  for (const m of js.matchAll(re)) problems.push(`js ${m[0]}`);
}
if (problems.length > 0) {
  console.error('build.mjs: the bundle references other origins:\n  ' + problems.join('\n  '));
  process.exit(1);
}

const hosts = [...new Set([...js.matchAll(/https?:\/\/([a-z0-9.-]+)/gi)].map((m) => m[1]))].sort();
for (const f of fs.readdirSync(outDir).sort()) {
  console.log(`${path.relative(path.resolve(here, '..'), path.join(outDir, f))}\t${fs.statSync(path.join(outDir, f)).size} bytes`);
}
console.log(`hosts merely mentioned in the JS (links/namespaces, never fetched): ${hosts.join(', ')}`);
