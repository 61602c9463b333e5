// The package as users get it: `npm pack` (root + this machine's platform
// package), installed with npm into a temp dir far from this checkout's
// node_modules, registered with the real `pi install <path>` on both Pi
// lines, and run by the real `pi` binary in print mode with a faux model.
// Catches a file missing from `files`, an undeclared runtime dependency, a
// loader path that only works from the repo, and host packages (pi-agent-core)
// resolved from the checkout instead of from the running Pi.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const FAUX_EXT = join(ROOT, '__test__/e2e/faux-cli-ext.mts')
const TRIPLE = 'linux-x64-gnu'
const LINES = [
  { label: '0.80.10', bin: join(ROOT, 'node_modules/@earendil-works/pi-coding-agent/dist/cli.js') },
  { label: '1.6.0', bin: join(ROOT, 'node_modules/pi-coding-agent-1x/dist/bundle/cli.js') },
]

let work
let installed // <work>/project/node_modules/pi-fabric-memory

const run = (cmd, args, options = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options })

/** `npm pack` of `dir` into `dest`; returns the tarball path. */
function pack(dir, dest) {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: dir }))
  return { file: join(dest, info.filename), files: info.files.map((f) => f.path) }
}

before(() => {
  work = mkdtempSync(join(tmpdir(), 'pfm-installed-'))
  const root = pack(ROOT, work)
  assert.ok(!root.files.some((f) => f.endsWith('.node')), 'the root package ships no binary: platform packages do')
  for (const needed of ['binding.cjs', 'index.js', 'extensions/pi-fabric-memory/index.ts', 'extensions/pi-fabric-memory/package.json', 'dist/extension/index.mjs', 'dist/extension/cli.mjs', 'Cargo.toml', 'src/lib.rs']) {
    assert.ok(root.files.includes(needed), `${needed} is packed`)
  }
  // The platform package as `napi prepublish` publishes it: its package.json and this machine's binary.
  const platformDir = join(work, 'platform')
  mkdirSync(platformDir)
  copyFileSync(join(ROOT, 'npm', TRIPLE, 'package.json'), join(platformDir, 'package.json'))
  copyFileSync(join(ROOT, `pi-fabric-memory.${TRIPLE}.node`), join(platformDir, `pi-fabric-memory.${TRIPLE}.node`))
  const platform = pack(platformDir, work)
  const project = join(work, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), '{"private": true}')
  run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', root.file, platform.file], { cwd: project })
  installed = join(project, 'node_modules', 'pi-fabric-memory')
  assert.deepEqual(
    readdirSync(join(project, 'node_modules')).filter((name) => !name.startsWith('.')).sort(),
    ['pi-fabric-memory', `pi-fabric-memory-${TRIPLE}`],
    'no runtime dependency beyond the platform package (host packages come from Pi)',
  )
})

after(() => rmSync(work, { recursive: true, force: true }))

/** One Pi line's agent dir with the package installed by `pi install <path>`. */
function piWorld(line) {
  const home = mkdtempSync(join(work, `pi-${line.label}-`))
  const env = { ...process.env, PI_CODING_AGENT_DIR: join(home, 'agent'), PI_OFFLINE: '1', PI_TELEMETRY: '0', HOME: home, NO_COLOR: '1' }
  delete env.NODE_OPTIONS
  const cwd = join(home, 'project')
  mkdirSync(cwd, { recursive: true })
  const pi = (args, script = []) =>
    run(process.execPath, [line.bin, ...args], { cwd, env: { ...env, PFM_FAUX_SCRIPT: JSON.stringify(script) }, timeout: 60_000, stdio: ['ignore', 'pipe', process.env.PFM_DEBUG ? 'inherit' : 'pipe'] })
  const installOut = pi(['install', installed])
  const settings = JSON.parse(readFileSync(join(env.PI_CODING_AGENT_DIR, 'settings.json'), 'utf8'))
  const prompt = (text, script) =>
    pi(['--no-skills', '--no-context-files', '-e', FAUX_EXT, '--provider', 'faux', '--model', 'faux-1', '-p', text], script)
  return { env, home, installOut, settings, prompt, memoryFile: join(env.PI_CODING_AGENT_DIR, 'memories', 'MEMORY.md') }
}

for (const line of LINES) {
  describe(`installed with pi install (Pi ${line.label})`, () => {
    test('a turn calls memory_sessions and memory_add; /memory dream runs with Pi\'s own pi-agent-core', { timeout: 180_000 }, () => {
      const w = piWorld(line)
      assert.ok(JSON.stringify(w.settings.packages ?? []).includes('pi-fabric-memory'), `pi install recorded the package: ${w.installOut}`)

      const out = w.prompt('What do you remember?', [
        { call: 'memory_sessions', args: { scope: 'global' } },
        { call: 'memory_add', args: { target: 'memory', content: 'The installed package works in real Pi.' } },
        { say: 'RESULTS', echo: true },
      ])
      assert.match(out, /memory_sessions: \{.*"sessions":\[\{"id"/, out)
      assert.match(out, /memory_add: \{\s*"success": true/, out)
      assert.equal(readFileSync(w.memoryFile, 'utf8'), 'The installed package works in real Pi.')

      // Dreaming over the session just written, with the session's own (faux) model.
      const dreamed = w.prompt('/memory dream', [
        // Dreaming verifies its evidence: the write cites the turn that holds its terms.
        { call: 'memory_add', args: { target: 'user', content: 'The user checks that the installed package works in real Pi.' }, cite: 'What do you remember?' },
        { say: 'Consolidated.' },
      ])
      const userFile = join(w.env.PI_CODING_AGENT_DIR, 'memories', 'USER.md')
      assert.ok(existsSync(userFile), `dreaming wrote USER.md (output: ${dreamed})`)
      assert.equal(readFileSync(userFile, 'utf8'), 'The user checks that the installed package works in real Pi.')
      const state = JSON.parse(readFileSync(join(w.env.PI_CODING_AGENT_DIR, 'memories', 'dreaming-state.json'), 'utf8'))
      assert.ok(state.lastConsolidatedAt, 'a successful run records its state')
    })
  })
}

describe('the native loader when no binary fits', () => {
  test('names the platform, the package that should provide it, and the build-from-source command', () => {
    const copy = join(work, 'hidden')
    mkdirSync(copy)
    for (const f of ['package.json', 'binding.cjs', 'index.js']) copyFileSync(join(installed, f), join(copy, f))
    const manifest = JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8'))
    manifest.optionalDependencies = { [`pi-fabric-memory-${TRIPLE}`]: manifest.version, 'pi-fabric-memory-darwin-arm64': manifest.version }
    writeFileSync(join(copy, 'package.json'), JSON.stringify(manifest))
    const probe = `try { require(${JSON.stringify(join(copy, 'binding.cjs'))}) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`
    const { code, message } = JSON.parse(run(process.execPath, ['-e', probe], { cwd: work }))
    assert.equal(code, 'native_binding_missing')
    assert.match(message, new RegExp(`no native addon for ${TRIPLE} \\(Node ${process.versions.node}\\)`))
    assert.match(message, new RegExp(`optional dependency pi-fabric-memory-${TRIPLE}@${manifest.version}`))
    assert.match(message, /Rust toolchain/)
    assert.ok(message.includes(`cd "${copy}" && npx --yes @napi-rs/cli@3 build --platform --release`), message)
  })
})
