// How Pi's startup list names this package after `pi install <checkout>` (a
// local path install): the real `pi install`, Pi's own resource loader, and
// Pi's own label functions (InteractiveMode's, called without a TUI). Pi names
// a local extension by its entry's path, dropping only a trailing
// `/index.ts` or `/index.js`: `extensions/index.mts` was listed as `index.mts`.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { PACKAGE_DIR, PI_LINES } from './pi-session.mjs'

/** Each line's `pi` binary (its package's `bin.pi`). */
const BIN = {
  '0.80.10': join(PACKAGE_DIR, 'node_modules/@earendil-works/pi-coding-agent/dist/cli.js'),
  '1.6.0': join(PACKAGE_DIR, 'node_modules/pi-coding-agent-1x/dist/bundle/cli.js'),
}

for (const line of PI_LINES) {
  test(`Pi ${line.label} lists a local install as pi-fabric-memory`, { timeout: 60_000 }, async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), `pfm-label-${line.label}-`)))
    const agentDir = join(root, 'agent')
    const cwd = join(root, 'project')
    mkdirSync(cwd, { recursive: true })
    const env = { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0' }
    const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]))
    try {
      execFileSync(process.execPath, [BIN[line.label], 'install', PACKAGE_DIR], { cwd, env: { ...process.env, ...env, HOME: root }, stdio: 'pipe' })
      Object.assign(process.env, env)
      const sdk = await import(line.sdk)
      const settingsManager = sdk.SettingsManager.create(cwd, agentDir)
      const loader = new sdk.DefaultResourceLoader({ cwd, agentDir, settingsManager, noSkills: true, noPromptTemplates: true, noThemes: true, noContextFiles: true })
      await loader.reload()
      const { extensions, errors } = loader.getExtensions()
      assert.deepEqual(errors, [])
      const ours = extensions.filter((extension) => extension.path.startsWith(`${PACKAGE_DIR}/`)).map(({ path, sourceInfo }) => ({ path, sourceInfo }))
      assert.equal(ours.length, 1)
      const mode = Object.create(sdk.InteractiveMode.prototype)
      assert.deepEqual(mode.getCompactExtensionLabels(ours), ['pi-fabric-memory'])
      // The expanded list (Ctrl+O) shows the path, with the same `/index.ts` dropped.
      assert.match(mode.formatExtensionDisplayPath(ours[0].path), /\/extensions\/pi-fabric-memory$/)
      // An npm install is named by its source and the entry's folder (README, Install in Pi).
      const npmRoot = join(root, 'npm', 'node_modules', 'pi-fabric-memory')
      const npm = { path: join(npmRoot, 'extensions', 'pi-fabric-memory', 'index.ts'), sourceInfo: { source: 'npm:pi-fabric-memory', scope: 'user', origin: 'package', baseDir: npmRoot } }
      assert.deepEqual(mode.getCompactExtensionLabels([npm]), ['pi-fabric-memory:pi-fabric-memory'])
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key]
        else process.env[key] = value
      }
      rmSync(root, { recursive: true, force: true })
    }
  })
}
