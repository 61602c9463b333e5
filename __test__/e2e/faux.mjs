// The pi-ai faux model in a real Pi ModelRuntime, registered through the
// config form that works on both Pi lines (reference/pi-e2e.md).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * `costPerCall`: the cost every response reports (the faux provider always
 * reports 0; a real provider reports what the call cost).
 */
export async function fauxModel(sdk, ai, { costPerCall } = {}) {
  const faux = ai.fauxProvider({ provider: 'faux', models: [{ id: 'faux-1' }], tokensPerSecond: 0 })
  const priced = (stream) => {
    if (!costPerCall) return stream
    // The faux provider pushes its events in a microtask, after this returns.
    const push = stream.push.bind(stream)
    stream.push = (event) => {
      if (event.type === 'done') event.message.usage.cost = { ...event.message.usage.cost, total: costPerCall }
      push(event)
    }
    return stream
  }
  const modelRuntime = await sdk.ModelRuntime.create({ credentials: new ai.InMemoryCredentialStore(), modelsPath: null, allowModelNetwork: false })
  modelRuntime.registerProvider('faux', {
    api: faux.api,
    baseUrl: 'http://localhost:0',
    apiKey: 'faux',
    streamSimple: (m, c, o) => priced(faux.provider.streamSimple(m, c, o)),
    models: faux.models.map(({ id, name, api, reasoning, input, cost, contextWindow, maxTokens }) => ({ id, name, api, reasoning, input, cost, contextWindow, maxTokens })),
  })
  return { faux, modelRuntime, model: modelRuntime.getModel('faux', 'faux-1') }
}

/** Disposes the sessions, restores the environment saved before the test, removes its temp root. */
export function teardown(sessions, savedEnv, root) {
  for (const session of sessions) {
    try {
      session.dispose?.()
    } catch {}
  }
  for (const [key, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
  rmSync(root, { recursive: true, force: true })
}

/** A compaction without an LLM call: Pi takes the extension's result. */
export const fixedCompaction = (pi) =>
  pi.on('session_before_compact', (event) => ({
    compaction: { summary: 'compacted', firstKeptEntryId: event.preparation.firstKeptEntryId, tokensBefore: event.preparation.tokensBefore },
  }))

/**
 * A real AgentSession with this package loaded by path (as an installed Pi
 * package) plus inline `factories`, nothing else discovered; session_start fired.
 */
export async function openSession(sdk, { packageDir, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager, tools, factories = [] }) {
  const resourceLoader = new sdk.DefaultResourceLoader({
    cwd, agentDir, settingsManager,
    noExtensions: true, noSkills: true, noPromptTemplates: true, noThemes: true, noContextFiles: true,
    additionalExtensionPaths: [packageDir],
    extensionFactories: factories,
  })
  await resourceLoader.reload()
  const errors = resourceLoader.getExtensions().errors
  if (errors.length) throw new Error(`extension load errors: ${JSON.stringify(errors)}`)
  const { session } = await sdk.createAgentSession({ cwd, agentDir, model, thinkingLevel: 'off', modelRuntime, resourceLoader, settingsManager, sessionManager, tools })
  await session.bindExtensions({})
  return session
}

/**
 * A temp Pi home for one test: `agentDir` (with `memories/`, set as
 * PI_CODING_AGENT_DIR, offline, no telemetry) and a project `cwd`, realpath'd so
 * paths compare equal to what Pi reports. `savedEnv` (plus `extraEnv` keys) is
 * what {@link teardown} restores.
 */
export function tempPiHome(prefix, extraEnv = []) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  const agentDir = join(root, 'agent')
  const cwd = join(root, 'project')
  for (const dir of [join(agentDir, 'memories'), cwd]) mkdirSync(dir, { recursive: true })
  // No background dreaming due-check or index warm-up (dreaming.test.mjs and warm-up.test.mjs cover them): one still
  // indexing at teardown races the removal.
  writeFileSync(join(agentDir, 'settings.json'), JSON.stringify({ memory: { warmUp: false }, 'pi-memory': { dreaming: { enabled: false } } }))
  const savedEnv = Object.fromEntries(['PI_CODING_AGENT_DIR', 'PI_OFFLINE', 'PI_TELEMETRY', ...extraEnv].map((key) => [key, process.env[key]]))
  Object.assign(process.env, { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0' })
  return { root, agentDir, cwd, savedEnv }
}

/** The text of every user message of a model call's context (dreaming's transcript prompt). */
export const userText = (ctx) =>
  ctx.messages
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((c) => c.text ?? '').join('')))
    .join('\n')

/** The `cite:` object of the transcript turn holding `needle`: the evidence a model copies into a write. */
export const citeOf = (ctx, needle) => {
  const block = userText(ctx).split('### Session ').find((b) => b.includes(needle))
  assert.ok(block, `no transcript turn holds ${needle}`)
  return JSON.parse(/^cite: (\{.*\})$/m.exec(block)[1])
}

/** Whether the real `git` is on PATH (the project tests skip without it). */
export function hasGit() {
  try {
    execFileSync('git', ['--version'], { stdio: 'pipe' })
    return true
  } catch {
    return false
  }
}

/** The real `git` in `cwd`, with an identity and a default branch of its own (no machine settings needed). */
export const git = (cwd, ...args) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' })
