// The package as users get it: `npm pack` (root + this machine's platform
// package), installed with npm into a temp dir far from this checkout's
// node_modules, registered with the real `pi install <path>` on both Pi
// lines, and run by the real `pi` binary in print mode with a faux model.
// Catches a file missing from `files`, an undeclared runtime dependency, a
// loader path that only works from the repo, and host packages (pi-agent-core)
// resolved from the checkout instead of from the running Pi. Then the README's
// "Install in Pi" block, run as written by a shell with a `pi` of each line on
// PATH, from a packed copy of this checkout standing in for it, and the size
// of what each install leaves.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
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
let rootPack // the root package's `npm pack`: { file, files }
let installed // <work>/project/node_modules/pi-fabric-memory

const run = (cmd, args, options = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options })

/** `npm pack` of `dir` into `dest`; returns the tarball path. */
function pack(dir, dest) {
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: dir }))
  return { file: join(dest, info.filename), files: info.files.map((f) => f.path) }
}

/** Every file under `dir` (relative paths, sorted) and their total size. */
function footprint(dir) {
  const files = readdirSync(dir, { recursive: true }).filter((f) => statSync(join(dir, f)).isFile()).sort()
  return { files, mb: files.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0) / 1e6 }
}

const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
/** The README's section under `heading`, to the next `## `. */
const section = (heading) => README.slice(README.indexOf(`\n${heading}\n`)).split(/\n## /)[1]
/** A section's first ```sh block, one command a line, comments dropped. */
const commandsOf = (text) => /```sh\n([\s\S]*?)```/.exec(text)[1].trim().split('\n').map((line) => line.replace(/\s+#.*$/, '').trim())
/** The installed footprint the README states ("That is all it installs: N MB"). */
const STATED_MB = Number(/That is all it installs: ([\d.]+) MB/.exec(section('## Install in Pi'))?.[1])

before(() => {
  work = mkdtempSync(join(tmpdir(), 'pfm-installed-'))
  const root = (rootPack = pack(ROOT, work))
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
  // What `pi install npm:pi-fabric-memory` will leave after the release: the same files, the binary in its package.
  const mb = footprint(join(project, 'node_modules')).mb
  assert.ok(Math.abs(mb - STATED_MB) <= STATED_MB * 0.2, `installed from the registry's tarballs: ${mb.toFixed(1)} MB, the README says ${STATED_MB} MB`)
})

after(() => rmSync(work, { recursive: true, force: true }))

/** A fresh HOME and agent dir for one Pi line; `pi(args, script)` runs that line's real `pi`. */
function piHome(line) {
  const home = mkdtempSync(join(work, `pi-${line.label}-`))
  const env = { ...process.env, PI_CODING_AGENT_DIR: join(home, 'agent'), PI_OFFLINE: '1', PI_TELEMETRY: '0', HOME: home, NO_COLOR: '1' }
  delete env.NODE_OPTIONS
  const cwd = join(home, 'project')
  mkdirSync(cwd, { recursive: true })
  const pi = (args, script = []) =>
    run(process.execPath, [line.bin, ...args], { cwd, env: { ...env, PFM_FAUX_SCRIPT: JSON.stringify(script) }, timeout: 60_000, stdio: ['ignore', 'pipe', process.env.PFM_DEBUG ? 'inherit' : 'pipe'] })
  const prompt = (text, script) =>
    pi(['--no-skills', '--no-context-files', '-e', FAUX_EXT, '--provider', 'faux', '--model', 'faux-1', '-p', text], script)
  const settings = () => JSON.parse(readFileSync(join(env.PI_CODING_AGENT_DIR, 'settings.json'), 'utf8'))
  return { env, home, cwd, pi, prompt, settings, memoryFile: join(env.PI_CODING_AGENT_DIR, 'memories', 'MEMORY.md') }
}

/** One Pi line's agent dir with the package installed by `pi install <path>`. */
function piWorld(line) {
  const w = piHome(line)
  return { ...w, installOut: w.pi(['install', installed]), settings: w.settings() }
}

for (const line of LINES) {
  describe(`installed with pi install (Pi ${line.label})`, () => {
    test('a turn calls memory_recall and memory_add; /memory dream runs with Pi\'s own pi-agent-core', { timeout: 180_000 }, () => {
      const w = piWorld(line)
      assert.ok(JSON.stringify(w.settings.packages ?? []).includes('pi-fabric-memory'), `pi install recorded the package: ${w.installOut}`)

      const out = w.prompt('What do you remember?', [
        { call: 'memory_recall', args: { query: 'remember', scope: 'global' } },
        { call: 'memory_add', args: { target: 'memory', content: 'The installed package works in real Pi.' } },
        { say: 'RESULTS', echo: true },
      ])
      assert.match(out, /memory_recall: \{"total":\d+.*"coverage":\{"complete":true\}/, out)
      assert.match(out, /memory_add: \{\s*"success":\s*true/, out)
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
  /** Requires a copy of the installed loader (its manifest edited by `edit`) that finds no binary; its error. */
  function missing(name, edit) {
    const copy = join(work, name)
    mkdirSync(copy)
    for (const f of ['package.json', 'binding.cjs', 'index.js']) copyFileSync(join(installed, f), join(copy, f))
    const manifest = edit(JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8')))
    writeFileSync(join(copy, 'package.json'), JSON.stringify(manifest))
    const probe = `try { require(${JSON.stringify(join(copy, 'binding.cjs'))}) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`
    const { code, message } = JSON.parse(run(process.execPath, ['-e', probe], { cwd: work }))
    assert.equal(code, 'native_binding_missing')
    assert.match(message, new RegExp(`no native addon for ${TRIPLE} \\(Node ${process.versions.node}\\)`))
    assert.match(message, /Rust toolchain/)
    assert.ok(message.includes(`cd "${copy}" && npx --yes @napi-rs/cli@3 build --platform --release`), message)
    return { manifest, message }
  }

  test('installed from the registry: names the platform, the package that should provide it, and the build-from-source command', () => {
    const { manifest, message } = missing('hidden', (m) => ({ ...m, optionalDependencies: { [`pi-fabric-memory-${TRIPLE}`]: m.version, 'pi-fabric-memory-darwin-arm64': m.version } }))
    assert.match(message, new RegExp(`optional dependency pi-fabric-memory-${TRIPLE}@${manifest.version}`))
  })

  test('a checkout or a copy packed from one (no platform packages listed): says a build and pack:local bring the binary, not a reinstall', () => {
    const { message } = missing('local-copy', (m) => m)
    assert.match(message, /lists no platform packages: it is a checkout or was packed from one/)
    assert.match(message, /npm run build writes the binary; npm run pack:local then writes local\/pi-fabric-memory\/ with it, to pi install/)
    assert.doesNotMatch(message, /reinstalling|optional dependency/)
  })
})

describe("the README's Install in Pi block, run as written", () => {
  const commands = commandsOf(section('## Install in Pi'))
  const BUILD = 'npm ci && npm run build && '
  let checkout

  before(() => {
    // The checkout after `npm ci && npm run build`: what the root packs (dist/ included), the build's binary, and
    // the script pack:local runs. `npm test` has just run those two commands in this checkout.
    checkout = join(work, 'checkout')
    mkdirSync(checkout)
    run('tar', ['-xzf', rootPack.file, '-C', checkout, '--strip-components=1'])
    mkdirSync(join(checkout, 'scripts'))
    copyFileSync(join(ROOT, 'scripts/pack-local.mjs'), join(checkout, 'scripts/pack-local.mjs'))
    copyFileSync(join(ROOT, `pi-fabric-memory.${TRIPLE}.node`), join(checkout, `pi-fabric-memory.${TRIPLE}.node`))
  })

  test('one line from a checkout, one from its tarball elsewhere', () => {
    assert.equal(commands.length, 2, commands.join('\n'))
    assert.ok(commands[0].startsWith(BUILD), `the checkout's line builds first: ${commands[0]}`)
    assert.ok(Number.isFinite(STATED_MB), 'the section states the installed footprint in MB')
  })

  /** Runs one README line in `cwd` with `pi` (this Pi line) on PATH and the world's HOME; the installed dir. */
  function install(line, w, command, cwd) {
    const bin = join(w.home, 'bin')
    mkdirSync(bin, { recursive: true })
    writeFileSync(join(bin, 'pi'), `#!/bin/sh\nexec "${process.execPath}" "${line.bin}" "$@"\n`)
    chmodSync(join(bin, 'pi'), 0o755)
    run('bash', ['-c', command], { cwd, env: { ...w.env, PATH: `${bin}:${process.env.PATH}` }, timeout: 120_000 })
    const packages = w.settings().packages ?? []
    assert.equal(packages.length, 1, `pi install recorded one package: ${JSON.stringify(packages)}`)
    // Pi records a local path relative to the settings file.
    return resolve(w.env.PI_CODING_AGENT_DIR, typeof packages[0] === 'string' ? packages[0] : packages[0].source)
  }

  /** The installed package loads its binary in a real pi turn, and is the shipped files plus the binary, nothing else. */
  function check(w, dir) {
    const out = w.prompt('What do you remember?', [
      { call: 'memory_add', args: { target: 'memory', content: 'Installed as the README says.' } },
      { say: 'RESULTS', echo: true },
    ])
    assert.match(out, /memory_add: \{\s*"success":\s*true/, out)
    assert.equal(readFileSync(w.memoryFile, 'utf8'), 'Installed as the README says.')
    const { files, mb } = footprint(dir)
    assert.deepEqual(files, [...rootPack.files, `pi-fabric-memory.${TRIPLE}.node`].sort(), 'the shipped files and this machine\'s binary: no node_modules')
    assert.ok(Math.abs(mb - STATED_MB) <= STATED_MB * 0.2, `${relative(work, dir)}: ${mb.toFixed(1)} MB, the README says ${STATED_MB} MB`)
    // The step the README used to give: with no devDependencies in the manifest, it has nothing to fetch.
    run('npm', ['install', '--omit=dev', '--offline', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: dir, env: w.env })
    assert.ok(!existsSync(join(dir, 'node_modules')), 'npm install in the installed package adds nothing')
  }

  for (const line of LINES) {
    test(`Pi ${line.label}: the checkout's line, then its tarball on a fresh HOME`, { timeout: 300_000 }, () => {
      const fromCheckout = piHome(line)
      const dir = install(line, fromCheckout, commands[0].slice(BUILD.length), checkout)
      assert.equal(dir, join(checkout, 'local', 'pi-fabric-memory'))
      check(fromCheckout, dir)

      const elsewhere = piHome(line)
      for (const name of readdirSync(join(checkout, 'local')).filter((n) => n.endsWith('.tgz'))) copyFileSync(join(checkout, 'local', name), join(elsewhere.cwd, name))
      const unpacked = install(line, elsewhere, commands[1], elsewhere.cwd)
      assert.equal(unpacked, join(elsewhere.cwd, 'p', 'package'))
      check(elsewhere, unpacked)
    })
  }

  test('`npm link` in the checkout puts the CLI on PATH: the CLI section runs as written from anywhere', () => {
    // The global prefix in a temp dir; the demo's agent dir under this test's temp dir.
    const prefix = join(work, 'global')
    const env = { ...process.env, npm_config_prefix: prefix, HOME: join(work, 'cli-home'), TMPDIR: join(work, 'cli-home'), NO_COLOR: '1' }
    mkdirSync(env.HOME)
    assert.match(section('## CLI'), /run `npm link` there once/)
    run('npm', ['link', '--offline', '--no-audit', '--no-fund'], { cwd: checkout, env })
    env.PATH = `${join(prefix, 'bin')}:${process.env.PATH}`
    // `demo [--agent-dir DIR]`: the optional part left out, as a newcomer types it.
    const runnable = commandsOf(section('## CLI'))
      .map((c) => c.replace(/ \[[^\]]*\]$/, ''))
      .filter((c) => /^pi-fabric-memory (--help|demo)$/.test(c))
    assert.deepEqual(runnable, ['pi-fabric-memory --help', 'pi-fabric-memory demo'], 'the CLI block lists --help and demo without arguments')
    for (const command of runnable) {
      const out = run('bash', ['-c', command], { cwd: env.HOME, env })
      assert.match(out, command.endsWith('demo') ? /Try: pi-fabric-memory sessions --agent-dir / : /^pi-fabric-memory — /, command)
    }
  })
})
