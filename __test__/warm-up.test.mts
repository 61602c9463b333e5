// No silent waits: the background warm-up Pi's session_start starts (and
// session_shutdown stops), and the progress a recall that indexes streams to
// Pi's tool update callback. In a stand-in Pi runtime; the real-Pi version is
// e2e/warm-up.test.mjs.
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import type { IndexProgress, SessionsArgs, SessionsPage } from 'pi-fabric-memory'
import { MemoryStore } from 'pi-fabric-memory'
import piFabricMemory from '../extension/index.mjs'
import { indexingUpdates, startWarmUp, WARM_UP_DELAY_MS, type IndexingUpdate, type WarmUpReport } from '../extension/recall/warm-up.mjs'
import { encodeCwd, tempAgent, type TempAgent } from './helpers.mjs'

function session(id: string, words: string[]): string {
  const header = { type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/home/u/proj' }
  const lines = words.map((text, i) =>
    JSON.stringify({ type: 'message', id: `${id}-${i}`, parentId: i ? `${id}-${i - 1}` : null, timestamp: '2026-01-01T00:00:01.000Z', message: { role: i % 2 ? 'assistant' : 'user', content: text, timestamp: i } }),
  )
  return [JSON.stringify(header), ...lines].join('\n') + '\n'
}

let agent: TempAgent
let savedAgentDir: string | undefined
const indexDir = () => join(agent.agentDir, 'fabric', 'memory-index')
const records = () => (existsSync(indexDir()) ? readdirSync(indexDir()).filter((name) => /\.(hot|cold)$/.test(name)).length : 0)

/** `count` sessions in this project's dir and `elsewhere` in another project's. */
function writeSessions(count: number, elsewhere = 0) {
  for (let i = 0; i < count; i++) agent.write(`p${i}.jsonl`, session(`p${i}`, [`question ${i} about checkout`, `answer ${i}`]))
  const other = join(agent.agentDir, 'sessions', encodeCwd('/home/u/other'))
  mkdirSync(other, { recursive: true })
  for (let i = 0; i < elsewhere; i++) writeFileSync(join(other, `o${i}.jsonl`), session(`o${i}`, [`other ${i} about checkout`, `reply ${i}`]))
}

const settings = (memory: Record<string, unknown>) => writeFileSync(join(agent.agentDir, 'settings.json'), JSON.stringify({ memory }))

/** The extension in a stand-in Pi runtime: its handlers, its tools, and a tool context for the project. */
function runtime() {
  const handlers = new Map<string, ((event: unknown, ctx: unknown) => unknown)[]>()
  const tools: any[] = []
  const pi = {
    registerTool: (tool: unknown) => tools.push(tool),
    registerCommand: () => {},
    on: (event: string, handler: any) => handlers.set(event, [...(handlers.get(event) ?? []), handler]),
    appendEntry: () => {},
  }
  const ctx = {
    cwd: agent.cwd,
    isProjectTrusted: () => false,
    sessionManager: { getSessionDir: () => '', getSessionFile: () => undefined, getLeafId: () => null, getBranch: () => [], getSessionId: () => 'live' },
  }
  piFabricMemory(pi as never, { store: new MemoryStore({ dir: join(agent.root, 'memories') }) })
  const emit = async (event: string, payload: object = {}) => {
    for (const handler of handlers.get(event) ?? []) await handler(payload, ctx)
  }
  const recall = (params: object, onUpdate?: (update: IndexingUpdate) => void) => tools.find((t) => t.name === 'memory_recall').execute('call_1', params, undefined, onUpdate, ctx)
  return { emit, recall }
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

describe('the background warm-up in Pi', () => {
  beforeEach(() => {
    agent = tempAgent()
    savedAgentDir = process.env.PI_CODING_AGENT_DIR
    process.env.PI_CODING_AGENT_DIR = agent.agentDir
  })
  afterEach(() => {
    if (savedAgentDir === undefined) delete process.env.PI_CODING_AGENT_DIR
    else process.env.PI_CODING_AGENT_DIR = savedAgentDir
    agent.cleanup()
  })

  test('session_start indexes this project and every other one before any tool call, after Pi has started', async () => {
    writeSessions(6, 4)
    const pi = runtime()
    const started = Date.now()
    await pi.emit('session_start', { reason: 'startup' })
    assert.ok(Date.now() - started < WARM_UP_DELAY_MS, 'the handler returns at once')
    assert.equal(records(), 0, 'nothing is indexed during startup')
    await until(() => records() === 10, 'every session indexed')
    // The last record is written just before its call returns.
    await sleep(300)
    const updates: IndexingUpdate[] = []
    const page = await pi.recall({ query: 'checkout', scope: 'global' }, (u) => updates.push(u))
    assert.equal(page.details.coverage.indexedSessions, 10)
    assert.deepEqual(updates, [], 'the first recall found every record current')
    await pi.emit('session_shutdown', { reason: 'quit' })
  })

  test('session_shutdown stops it: no further call, the one in flight finishes', async () => {
    // One session per call: the warm-up takes a few seconds over 30 sessions.
    settings({ maxSyncSessions: 1 })
    writeSessions(30)
    const pi = runtime()
    await pi.emit('session_start', { reason: 'startup' })
    await until(() => records() > 0, 'the first warm-up call')
    await pi.emit('session_shutdown', { reason: 'quit' })
    await sleep(500)
    const left = records()
    assert.ok(left < 30, `stopped before the end (${left} of 30 indexed)`)
    await sleep(700)
    assert.equal(records(), left, 'no call after shutdown')
  })

  test('memory.warmUp false (or anything but true), and memory.enabled false, start nothing', async () => {
    writeSessions(3)
    for (const memory of [{ warmUp: false }, { warmUp: 'false' }, { enabled: false }]) {
      settings(memory)
      const pi = runtime()
      await pi.emit('session_start', { reason: 'startup' })
      await sleep(WARM_UP_DELAY_MS + 500)
      assert.equal(records(), 0, JSON.stringify(memory))
      await pi.emit('session_shutdown', { reason: 'quit' })
    }
  })

  test('a recall that indexes streams "sessions N/M, X/Y MB" to the tool update callback', async () => {
    settings({ warmUp: false })
    writeSessions(5)
    const pi = runtime()
    const updates: IndexingUpdate[] = []
    const page = await pi.recall({ query: 'checkout' }, (u) => updates.push(u))
    assert.equal(page.details.coverage.indexedSessions, 5)
    assert.ok(updates.length >= 1, 'at least the plan')
    assert.match(updates[0].content[0].text, /^indexing: 0\/5 sessions · 0 B\/\d+(\.\d)? kB$/)
    assert.deepEqual([updates[0].details.indexing.sessionsToIndex, updates[0].details.indexing.eligibleSessions], [5, 5])
    const again: IndexingUpdate[] = []
    await pi.recall({ query: 'checkout' }, (u) => again.push(u))
    assert.deepEqual(again, [], 'nothing to index, nothing shown')
    // Without Pi's callback (a codemode script, dreaming's agent) the call simply runs.
    assert.equal((await pi.recall({ query: 'answer' })).details.coverage.complete, true)
  })
})

const progress = (sessionsIndexed: number, sessionsToIndex = 10): IndexProgress => ({
  eligibleSessions: 10, freshSessions: 0, sessionsToIndex, sessionsIndexed, bytesToIndex: 10e6, bytesIndexed: sessionsIndexed * 1e6,
})

/** A stand-in for `memory.sessions`: each call "builds" `perCall` of `total` sessions. */
function fakeSessions(total: number, perCall: number, calls: SessionsArgs[]) {
  const done: Record<string, number> = {}
  return async (args: SessionsArgs = {}, options: { onProgress?: (p: IndexProgress) => void } = {}) => {
    calls.push(args)
    const scope = String(args.scope)
    const before = done[scope] ?? 0
    const step = Math.min(perCall, total - before)
    options.onProgress?.({ ...progress(0, step), freshSessions: before })
    await sleep(30)
    done[scope] = before + step
    options.onProgress?.({ ...progress(step, step), freshSessions: before })
    const indexedSessions = done[scope]
    const reasons = indexedSessions < total ? ['max_sync_sessions'] : []
    return { scope, branches: 'active', sessions: [], coverage: { complete: !reasons.length, indexedSessions, eligibleSessions: total, staleSessions: total - indexedSessions, incompleteSessions: 0, unavailableSessions: 0, reasons } } as unknown as SessionsPage
  }
}

describe('startWarmUp', () => {
  // Its timers are unref'd (a warm-up never keeps a host alive): the stand-in calls are not work Node waits for.
  let keepAlive: NodeJS.Timeout
  before(() => (keepAlive = setInterval(() => {}, 1000)))
  after(() => clearInterval(keepAlive))

  test('warms the project first, then global, each until current, reporting while a call runs', async () => {
    const calls: SessionsArgs[] = []
    const warmUp = startWarmUp({ sessions: fakeSessions(4, 2, calls) as never }, { delayMs: 0, pauseMs: 0 })
    const reports: WarmUpReport[] = []
    warmUp.subscribe((r) => reports.push(r))
    const outcome = await warmUp.finished
    assert.deepEqual(calls.map((c) => c.scope), ['project', 'project', 'global', 'global'])
    assert.deepEqual(outcome, { status: 'done', built: { sessions: 8, bytes: 40e6 }, calls: 4 })
    assert.deepEqual(reports.filter((r) => r.scope === 'project').map((r) => [r.before.sessions, r.progress.sessionsIndexed]), [[0, 0], [0, 2], [2, 0], [2, 2]])
    assert.equal(warmUp.current(), undefined, 'nothing in flight once done')
  })

  test('stop() during a call: that call finishes, no further one', async () => {
    const calls: SessionsArgs[] = []
    const warmUp = startWarmUp({ sessions: fakeSessions(100, 1, calls) as never }, { delayMs: 0, pauseMs: 0 })
    await until(() => calls.length === 1, 'the first call')
    assert.equal(warmUp.current()?.scope, 'project', 'a call is in flight')
    warmUp.stop()
    assert.equal((await warmUp.finished).status, 'stopped')
    assert.equal(calls.length, 1)
  })

  test('stop() before the delay: no call at all, and the timer is gone at once', async () => {
    const calls: SessionsArgs[] = []
    const warmUp = startWarmUp({ sessions: fakeSessions(1, 1, calls) as never }, { delayMs: 60_000 })
    warmUp.stop()
    assert.deepEqual(await warmUp.finished, { status: 'stopped', built: { sessions: 0, bytes: 0 }, calls: 0 })
    assert.deepEqual(calls, [])
  })

  test('a failing call ends it as failed, never as a rejection', async () => {
    const warmUp = startWarmUp({ sessions: async () => Promise.reject(new Error('invalid settings')) }, { delayMs: 0 })
    assert.deepEqual(await warmUp.finished, { status: 'failed', message: 'invalid settings', built: { sessions: 0, bytes: 0 }, calls: 0 })
  })
})

describe('indexingUpdates', () => {
  /** A warm-up with a call in flight, whose reports the test sends. */
  function runningWarmUp() {
    const listeners = new Set<(r: WarmUpReport) => void>()
    let latest: WarmUpReport | undefined = { scope: 'global', progress: progress(3), before: { sessions: 20, bytes: 5e6 }, startedAt: Date.now() - 1000 }
    return {
      current: () => latest,
      subscribe: (l: (r: WarmUpReport) => void) => (listeners.add(l), () => void listeners.delete(l)),
      report: (p: IndexProgress) => {
        latest = { ...latest!, progress: p }
        for (const l of listeners) l(latest)
      },
      listeners,
    }
  }

  test("a call waiting behind the warm-up shows the warm-up's progress, then its own once it plans work", async () => {
    const warmUp = runningWarmUp()
    const updates: IndexingUpdate[] = []
    const view = indexingUpdates((u) => updates.push(u), warmUp, 0)
    assert.match(updates[0].content[0].text, /^indexing: 3\/10 sessions · 8\.0 MB\/15\.0 MB · /, 'the call in flight at once')
    warmUp.report(progress(5))
    assert.match(updates[1].content[0].text, /^indexing: 5\/10 sessions/)
    view.onProgress({ ...progress(0, 0), freshSessions: 10 })
    assert.equal(updates.length, 2, 'a call with nothing to index shows nothing of its own')
    view.onProgress({ ...progress(0, 4), freshSessions: 6 })
    assert.match(updates[2].content[0].text, /^indexing: 6\/10 sessions · 0 B\/10\.0 MB$/)
    assert.equal(warmUp.listeners.size, 0, 'its own progress replaces the warm-up')
    warmUp.report(progress(9))
    view.stop()
    view.onProgress({ ...progress(4, 4), freshSessions: 6 })
    assert.equal(updates.length, 3, 'nothing after the call or from the warm-up it left')
  })

  test("updates are throttled; the first goes out at once, and so does the plan's last", () => {
    const updates: IndexingUpdate[] = []
    const view = indexingUpdates((u) => updates.push(u), undefined, 60_000)
    for (let i = 0; i < 10; i++) view.onProgress(progress(i))
    assert.equal(updates.length, 1)
    view.onProgress(progress(10))
    assert.deepEqual(updates.map((u) => u.details.indexing.sessionsIndexed), [0, 10])
    view.stop()
  })
})
