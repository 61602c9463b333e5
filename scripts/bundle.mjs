#!/usr/bin/env node
// The two modules Node loads first in a fresh process, the package root
// (`dist/extension/index.mjs`: `import 'pi-fabric-memory'` and Pi's
// extension entry) and the CLI (`dist/extension/cli.mjs`), each bundled into
// one file over what `tsc -p extension` emitted (types, and the per-module
// files the tests read). Why: Node's ESM loader resolves, reads and links
// every module of a graph asynchronously, one file at a time; the root's 31
// modules took ~60 ms of a fresh import, one bundled module of the same code
// ~20 ms. The addon stays outside (`createRequire` of `pi-fabric-memory/native`
// at run time), so there is still one `MemoryEngine` class per process.
import { build } from 'esbuild'
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Node's built-in modules by `require`, not `import`: an ES import of a
 * built-in builds its ESM facade, which reads every export, getters included
 * (`node:fs`'s `ReadStream` loads the stream modules, ~3 ms of a fresh
 * import); a require reads only the properties used, when they are used.
 */
const builtinsByRequire = {
  name: 'builtins-by-require',
  setup(bundle) {
    bundle.onResolve({ filter: /^node:/ }, (args) =>
      args.namespace === 'builtin' ? { path: args.path, external: true } : { path: args.path, namespace: 'builtin' },
    )
    bundle.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)})` }))
  },
}

const root = dirname(dirname(fileURLToPath(import.meta.url)))
await build({
  absWorkingDir: root,
  entryPoints: { index: 'extension/index.mts', cli: 'extension/cli.mts' },
  outdir: join(root, 'dist', 'extension'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  // Host packages (type-only here) and the addon's loader are never copied in.
  external: ['pi-fabric-memory/native', '@earendil-works/*'],
  plugins: [builtinsByRequire],
  // The `require` those built-ins use (esbuild's ESM output has none of its own).
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
})

/**
 * esbuild wraps each required built-in in `__toESM`, which copies every property of the module onto a new object
 * as a getter (`node:fs` has ~100): 28 copies cost ~3 ms of a fresh CLI call. A built-in imported only by name
 * (`import { readFileSync } from 'node:fs'`, as this package's code does) is read as `import_node_fs.readFileSync`
 * off whatever object holds it, so the module itself serves; one whose `default` is read keeps its copy.
 */
function withoutBuiltinCopies(file) {
  const text = readFileSync(file, 'utf8')
  const unwrapped = text.replace(/\b(import_node_\w+) = __toESM\((require_node_\w+)\(\), 1\)/g, (line, name, req) =>
    text.includes(`${name}.default`) ? line : `${name} = ${req}()`,
  )
  if (unwrapped !== text) writeFileSync(file, unwrapped)
}
for (const entry of ['index', 'cli']) withoutBuiltinCopies(join(root, 'dist', 'extension', `${entry}.mjs`))

// The `bin`: executable as built, so a link to it (npm link, a PATH entry) runs without npm's chmod.
chmodSync(join(root, 'dist', 'extension', 'cli.mjs'), 0o755)
