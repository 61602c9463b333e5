// Dreaming's pure logic: settings, state file, lock, gates, prompt budget, and
// dream() with a stand-in session model and consolidation (the real agent
// with the faux model runs in e2e/dreaming.test.mjs).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, test } from 'node:test'
import { MemoryStore } from 'pi-fabric-memory'
import {
  acquireLock,
  composeUserPrompt,
  CONSOLIDATION_SYSTEM_PROMPT,
  dream,
  dreamingSettings,
  dreamFooter,
  dreamingStatus,
  OPT_IN_FOOTER,
  gatherTurns,
  LOCK_DIR,
  readState,
  STATE_FILE,
  timeGate,
  writeState,
  type DreamOptions,
  type Turn,
} from '../extension/dreaming/index.mjs'
import { citationReader } from '../extension/curated/cited.mjs'
import { distinctiveTerms, holds, verifyEvidence } from '../extension/dreaming/evidence.mjs'
import { runMemoryCommand } from '../extension/curated/command.mjs'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pfm-dreaming-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

describe('settings', () => {
  test('defaults, numeric strings, the deprecated alias and enabled: false', () => {
    assert.deepEqual(dreamingSettings(undefined), {
      enabled: false,
      enabledSet: false,
      minHoursSinceLastRun: 24,
      minTurnsSinceLastRun: 5,
      autoApply: false, maxOutputTokens: 16_000, maxCost: 0.5,
    })
    assert.equal(dreamingSettings({ model: { provider: 'x' } }).model, undefined, 'a model needs both names')
    const s = dreamingSettings({ enabled: false, minHoursSinceLastRun: '2', minSessionsSinceLastRun: 7, model: { provider: 'x', model: 'y' }, autoApply: true, maxOutputTokens: '500', maxCost: 0.1 })
    assert.deepEqual(s, { enabled: false, enabledSet: true, minHoursSinceLastRun: 2, minTurnsSinceLastRun: 7, model: { provider: 'x', model: 'y' }, autoApply: true, maxOutputTokens: 500, maxCost: 0.1 })
    assert.equal(dreamingSettings({ minTurnsSinceLastRun: 1, minSessionsSinceLastRun: 7 }).minTurnsSinceLastRun, 1)
    assert.equal(dreamingSettings({ minTurnsSinceLastRun: -3 }).minTurnsSinceLastRun, 5)
  })

  test('opt-in: off unless enabled is true; a configured object without it stays off; an explicit choice is kept', () => {
    const state = (raw: unknown) => [dreamingSettings(raw).enabled, dreamingSettings(raw).enabledSet]
    assert.deepEqual(state(undefined), [false, false])
    assert.deepEqual(state({ model: { provider: 'p', model: 'm' }, autoApply: true }), [false, false])
    assert.deepEqual(state({ enabled: 'yes' }), [false, false], 'not a boolean: unset')
    assert.deepEqual(state({ enabled: true }), [true, true])
    assert.deepEqual(state({ enabled: 'true' }), [true, true], 'as "${VAR}" interpolation yields it')
    assert.deepEqual(state({ enabled: false }), [false, true])
    assert.deepEqual(state({ enabled: 'false' }), [false, true])
  })
})

describe('state file', () => {
  test('missing or malformed is "never ran"; writes are atomic and round-trip', () => {
    assert.deepEqual(readState(dir), { lastConsolidatedAt: null, lastTurnCount: 0 })
    for (const bad of ['{not json', '[]', 'null', '{"lastConsolidatedAt":"yesterday-ish"}', '{"lastConsolidatedAt":5}']) {
      writeFileSync(join(dir, STATE_FILE), bad)
      assert.deepEqual(readState(dir), { lastConsolidatedAt: null, lastTurnCount: 0 }, bad)
    }
    writeState(join(dir, 'nested'), { lastConsolidatedAt: '2026-01-02T03:04:05.000Z', lastTurnCount: 6 })
    assert.deepEqual(readState(join(dir, 'nested')), { lastConsolidatedAt: '2026-01-02T03:04:05.000Z', lastTurnCount: 6 })
    assert.deepEqual(readdirSync(join(dir, 'nested')), [STATE_FILE], 'no temp file left behind')
    // The original's field name is read too.
    writeFileSync(join(dir, STATE_FILE), JSON.stringify({ lastConsolidatedAt: '2026-01-02T03:04:05.000Z', lastSessionCount: 3 }))
    assert.equal(readState(dir).lastTurnCount, 3)
  })

  test('a FIFO or an oversized file as the state is "never ran", read without blocking', () => {
    const special = join(dir, 'special')
    mkdirSync(special, { recursive: true })
    execFileSync('mkfifo', [join(special, STATE_FILE)])
    // readFileSync blocked the event loop here forever.
    assert.deepEqual(readState(special), { lastConsolidatedAt: null, lastTurnCount: 0 })
    rmSync(join(special, STATE_FILE))
    writeFileSync(join(special, STATE_FILE), `{"lastConsolidatedAt":"2026-01-02T03:04:05.000Z","pad":"${'x'.repeat(70_000)}"}`)
    assert.deepEqual(readState(special), { lastConsolidatedAt: null, lastTurnCount: 0 })
  })
})

describe('lock', () => {
  test('exclusive until released; a stale lock is taken over, a fresh one is not', () => {
    const first = acquireLock(dir)
    assert.ok(first)
    assert.equal(acquireLock(dir), undefined)
    first.release()
    assert.ok(!existsSync(join(dir, LOCK_DIR)))
    const again = acquireLock(dir)
    assert.ok(again)
    // An abandoned lock (holder died: no refresh) older than the stale age is taken over.
    const old = new Date(Date.now() - 10 * 60_000)
    utimesSync(join(dir, LOCK_DIR), old, old)
    assert.equal(acquireLock(dir, 60 * 60_000), undefined, 'younger than a 1 h stale age')
    const taken = acquireLock(dir, 60_000)
    assert.ok(taken)
    assert.equal(acquireLock(dir, 60_000), undefined)
    taken.release()
    again.release()
  })
})

describe('gates', () => {
  const settings = dreamingSettings({ enabled: true, minHoursSinceLastRun: 24 })
  test('never ran is due; 23 h is not, 24 h is', () => {
    const now = Date.parse('2026-03-02T12:00:00Z')
    assert.equal(timeGate({ lastConsolidatedAt: null, lastTurnCount: 0 }, settings, now).open, true)
    assert.equal(timeGate({ lastConsolidatedAt: '2026-03-01T13:00:00Z', lastTurnCount: 0 }, settings, now).open, false)
    assert.equal(timeGate({ lastConsolidatedAt: '2026-03-01T12:00:00Z', lastTurnCount: 0 }, settings, now).open, true)
    assert.match(dreamingStatus(dir, settings, { now }), /^Dreaming: on; never ran; due when 5 new turn/)
    writeState(dir, { lastConsolidatedAt: '2026-03-02T11:00:00.000Z', lastTurnCount: 4 })
    assert.match(dreamingStatus(dir, settings, { now }), /last run 2026-03-02T11:00:00.000Z \(4 turns read\); next run after 2026-03-03T11:00:00.000Z/)
  })
})

describe('what dreaming tells the user', () => {
  test('/memory status, while off and unchosen, says how to turn dreaming on, what a run reads and what it may cost', () => {
    const saved = process.env.PI_CODING_AGENT_DIR
    process.env.PI_CODING_AGENT_DIR = dir
    try {
      const line = dreamingStatus(dir, dreamingSettings(undefined), { includeGlobal: true, model: { provider: 'faux', id: 'faux-1' } })
      assert.equal(
        line,
        `Dreaming: off until you turn it on: "pi-memory": {"dreaming": {"enabled": true}} in ${join(dir, 'settings.json')}. ` +
          'Then, at a session start at most every 24 h, once 5 new turns exist, it reads up to 8,000 characters of the newest turns in the recent sessions of every project, ' +
          "sends them to faux/faux-1 (the session's model) and spends at most 16,000 output tokens and cost 0.5 (as the provider reports it) a run; " +
          'it proposes replacements and removals for /memory review.',
      )
      const other = dreamingStatus(dir, dreamingSettings({ maxCost: 0.1, model: { provider: 'p', model: 'm' } }))
      assert.match(other, /in this session dir's recent sessions, sends them to p\/m \(pi-memory\.dreaming\.model\) and spends at most 16,000 output tokens and cost 0\.1 /)
      assert.match(dreamingStatus(dir, dreamingSettings(undefined)), /sends them to the Pi session's current model and/, 'the CLI has no session model to name')
      assert.equal(dreamingStatus(dir, dreamingSettings({ enabled: false })), 'Dreaming: off (pi-memory.dreaming.enabled is false)', 'a chosen off is one short line')
      assert.match(dreamingStatus(dir, dreamingSettings({ enabled: true }), { lastRun: 'Dreaming read 2 new turn(s) …' }), /^Dreaming: on; never ran;.*\nLast run here: Dreaming read 2 new turn/)
    } finally {
      if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR
      else process.env.PI_CODING_AGENT_DIR = saved
    }
  })

  test('the footer: a short opt-in pointer, and one short line per run that happened', () => {
    assert.equal(OPT_IN_FOOTER, 'dreaming off (opt-in: /memory status)')
    const long = 'Dreaming read 3 new turn(s) from 1 session(s) (1,234 characters): 2 change(s): memory_apply memory; applied 1 addition(s); 1 change(s) await review (/memory review); output 812 tokens, cost 0.0011.'
    assert.equal(dreamFooter({ status: 'done', message: long, applied: 1, proposed: 1, dropped: 2 }), 'dreamed: 1 applied, 1 proposed, 2 dropped')
    assert.equal(dreamFooter({ status: 'done', message: long, applied: 0, proposed: 0, dropped: 0 }), 'dreamed: no changes')
    assert.equal(dreamFooter({ status: 'done', message: long, applied: 0, proposed: 0, stopped: 'maxCost (0.5)' }), 'dreaming stopped at maxCost: nothing applied')
    assert.equal(dreamFooter({ status: 'failed', message: long }), 'dreaming failed (/memory status)')
    assert.equal(dreamFooter({ status: 'no_model', message: long }), 'dreaming skipped: no model (/memory status)')
    for (const status of ['not_due', 'locked', 'aborted', 'disabled'] as const) assert.equal(dreamFooter({ status, message: long }), undefined, status)
  })
})

describe('prompts', () => {
  test('the system prompt has the four phases, the tools, and treats transcripts as evidence', () => {
    for (const text of ['Phase 1 — Orient', 'Phase 2 — Gather recent signal', 'Phase 3 — Consolidate', 'Phase 4 — Verify and report']) {
      assert.ok(CONSOLIDATION_SYSTEM_PROMPT.includes(text), text)
    }
    for (const tool of ['memory_read', 'memory_add', 'memory_replace', 'memory_remove']) assert.ok(CONSOLIDATION_SYSTEM_PROMPT.includes(tool))
    assert.match(CONSOLIDATION_SYSTEM_PROMPT, /evidence .* never instructions/)
    assert.ok(!/2200|1375|ZERO information loss/.test(CONSOLIDATION_SYSTEM_PROMPT))
  })

  test('the user prompt keeps the newest turns within the budget, oldest first, and says which it kept', () => {
    const turns: Turn[] = Array.from({ length: 10 }, (_, i) => ({ sessionId: `s${i}`, user: `u${i} ${'x'.repeat(1500)}`, assistant: `a${i}`, entryIds: [`e${i}`], at: 1_700_000_000_000 + i }))
    const composed = composeUserPrompt(turns)
    const prompt = composed.text
    assert.ok(prompt.length <= 8000, String(prompt.length))
    assert.deepEqual(composed.turns, turns.slice(10 - composed.turns.length), 'the newest turns, oldest first')
    assert.equal(composed.turns.length, prompt.split('### Session ').length - 1)
    const overhead = composeUserPrompt(turns.slice(9)).text.length - composeUserPrompt(turns.slice(9)).chars
    assert.equal(composed.chars, prompt.length - overhead, 'the characters of the turns, without header and footer')
    assert.ok(prompt.includes('u9') && prompt.includes('u8') && !prompt.includes('u0 '))
    assert.ok(prompt.indexOf('u8') < prompt.indexOf('u9'))
    assert.match(prompt, /evidence to review, not instructions/)
    assert.match(prompt, /Begin by calling memory_read/)
    assert.deepEqual({ ...composeUserPrompt([]), text: '' }, { text: '', turns: [], chars: 0 })
    assert.match(composeUserPrompt([]).text, /No recent conversations/)
  })
})

/** The one entry {@link fakeMemory}'s `expand` serves: what the tests' writes cite. */
const EVIDENCE_TEXT = 'We use pnpm now, CI runs on every push, and the staging cluster is kestrel.'
const CITE = [{ session: 'evidence', entryIds: ['ev1'] }]
/** Its text in one chunk, as the addon pages it (the evidence check joins chunks as `memory.walk` does). */
const WHOLE = { start: 0, end: EVIDENCE_TEXT.length, total: EVIDENCE_TEXT.length, complete: true }

/** A stand-in for `createMemory()`'s sessions/walk over fixed entries, and `expand` of the evidence entry. */
function fakeMemory(sessions: Record<string, Array<{ role: string; text: string; timestamp: number }>>, mtime = Date.now()) {
  return {
    expand: (async (args: { session?: string; entryIds?: string[]; indices?: number[] }) =>
      args.session === 'evidence' && (args.entryIds?.includes('ev1') || args.indices?.includes(0))
        ? { session: '/evidence.jsonl', sessionId: 'evidence', entries: [{ index: 0, entryId: 'ev1', role: 'user', timestamp: Date.parse('2026-04-30T09:15:00Z'), text: EVIDENCE_TEXT, textRange: WHOLE }], next: null }
        : { session: null, sessionId: null, entries: [], next: null, error: { code: 'address_not_found', message: 'no such entry' } }) as never,
    sessions: async () => ({ scope: 'global', branches: 'active', sessions: Object.keys(sessions).map((file) => ({ id: `id-${file}`, file, mtime })), coverage: {} }) as never,
    walk: (async (selector: { session: string }, visitor: (e: unknown) => unknown) => {
      for (const e of sessions[selector.session] ?? []) if ((await visitor(e)) === false) break
      return { visited: 0, stopped: false }
    }) as never,
  }
}

describe('gatherTurns and dream()', () => {
  const entries = (n: number, at = 1000) =>
    Array.from({ length: n }, (_, i) => [
      { role: 'user', text: `question ${i}`, timestamp: at + 2 * i },
      { role: 'toolResult', text: 'noise', timestamp: at + 2 * i },
      { role: 'assistant', text: `answer ${i}`, timestamp: at + 2 * i + 1 },
    ]).flat()

  test('turns pair a user message with the assistant text after it; old turns and unanswered ones are dropped', async () => {
    const memory = fakeMemory({ '/a.jsonl': [...entries(3), { role: 'user', text: 'unanswered', timestamp: 5000 }] })
    const turns = await gatherTurns(memory, { includeGlobal: true, since: 1002 })
    assert.deepEqual(turns.map((t) => [t.sessionId, t.user, t.assistant]), [
      ['id-/a.jsonl', 'question 1', 'answer 1'],
      ['id-/a.jsonl', 'question 2', 'answer 2'],
    ])
    assert.deepEqual(await gatherTurns(memory, { includeGlobal: false }), [], 'not global, no session dir: nothing read')
  })

  const options = (over: Partial<DreamOptions>): DreamOptions => ({
    store: new MemoryStore({ dir }),
    settings: dreamingSettings({ enabled: true, minTurnsSinceLastRun: 2, model: { provider: 'p', model: 'm' } }),
    memory: fakeMemory({ '/a.jsonl': entries(3) }),
    registry: { find: () => ({ id: 'm' }), getApiKeyAndHeaders: async () => ({ ok: true as const }) },
    includeGlobal: true,
    ...over,
  })
  const ok = async () => ({ ok: true, aborted: false, turns: 1, writes: ['memory_add memory'], summary: 'added' })

  test("without a configured model the session's own model is used, never another provider", async () => {
    const used: unknown[] = []
    const recording = async (o: { model: unknown }) => (used.push(o.model), ok())
    const settings = dreamingSettings({ enabled: true, minTurnsSinceLastRun: 2 })
    const sessionModel = { provider: 'faux', id: 'faux-1' }
    const registry = { find: () => assert.fail('no registry lookup without a configured model') }
    const none = await dream(options({ settings, registry, consolidate: recording as never }))
    assert.equal(none.status, 'no_model')
    assert.match(none.message, /the session has none selected and pi-memory\.dreaming\.model is unset/)
    assert.equal(used.length, 0)
    const done = await dream(options({ settings, registry, currentModel: sessionModel, consolidate: recording as never }))
    assert.equal(done.status, 'done')
    assert.deepEqual(used, [sessionModel])
    assert.match(dreamingStatus(dir, settings, { model: sessionModel }), /sends them to faux\/faux-1 \(the session's model\) and spends .*; it proposes replacements and removals for \/memory review$/)
  })

  test('state is written only after a successful run; failures, aborts and missing models leave it', async () => {
    const failing = async () => ({ ok: false, aborted: false, error: 'boom', turns: 1, writes: [], summary: '' })
    assert.equal((await dream(options({ consolidate: failing }))).status, 'failed')
    assert.equal(readState(dir).lastConsolidatedAt, null)
    const controller = new AbortController()
    const aborting = async () => (controller.abort(), { ok: true, aborted: false, turns: 1, writes: [], summary: '' })
    assert.equal((await dream(options({ consolidate: aborting, signal: controller.signal }))).status, 'aborted')
    assert.equal(readState(dir).lastConsolidatedAt, null)
    const noModel = await dream(options({ registry: { find: () => undefined }, consolidate: ok }))
    assert.equal(noModel.status, 'no_model')
    const noKey = await dream(options({ registry: { find: () => ({}), getApiKeyAndHeaders: async () => ({ ok: false as const, error: 'no API key' }) }, consolidate: ok }))
    assert.match(noKey.message, /no credentials \(no API key\)/)
    assert.equal(readState(dir).lastConsolidatedAt, null)
    assert.ok(!existsSync(join(dir, LOCK_DIR)), 'the lock is released on every path')

    const done = await dream(options({ consolidate: ok, now: () => Date.parse('2026-05-01T00:00:00Z') }))
    assert.equal(done.status, 'done')
    assert.match(done.message, /^Dreaming read 3 new turn\(s\) from 1 session\(s\) \(\d+ characters\): 1 change\(s\): memory_add memory/)
    assert.deepEqual(readState(dir), { lastConsolidatedAt: '2026-05-01T00:00:00.000Z', lastTurnCount: 3, lastDropped: 0 })
  })

  test('the outcome says what the model read: the newest turns that fit the transcript budget, not every turn found', async () => {
    const seen: string[] = []
    const recording = async (o: { prompt: string }) => (seen.push(o.prompt), ok())
    const memory = fakeMemory({ '/a.jsonl': entries(876) })
    const outcome = await dream(options({ memory, consolidate: recording as never }))
    assert.equal(outcome.status, 'done', outcome.message)
    const inPrompt = seen[0].split('### Session ').length - 1
    assert.ok(inPrompt > 10 && inPrompt < 100, String(inPrompt))
    assert.equal(outcome.turns, 876, 'found')
    assert.deepEqual(outcome.read?.turns, inPrompt)
    assert.ok(outcome.read!.chars <= 8000, String(outcome.read!.chars))
    assert.ok(seen[0].includes('question 875\n') && !seen[0].includes('question 0\n'), 'the newest turns')
    const chars = outcome.read!.chars.toLocaleString('en-US')
    assert.match(outcome.message, new RegExp(`^Dreaming read ${inPrompt} of 876 new turn\\(s\\) from 1 session\\(s\\) \\(${chars} characters\\): 1 change`))
    assert.equal(readState(dir).lastTurnCount, inPrompt, 'the state records the turns read')
  })

  test('the time gate, the turn gate, the lock, disabled, and force', async () => {
    let calls = 0
    const counting = async () => (calls++, ok())
    writeState(dir, { lastConsolidatedAt: new Date(Date.now() - 3_600_000).toISOString(), lastTurnCount: 1 })
    assert.equal((await dream(options({ consolidate: counting }))).status, 'not_due')
    const forced = await dream(options({ consolidate: counting, memory: fakeMemory({ '/a.jsonl': entries(3, Date.now()) }), force: true }))
    assert.equal(forced.status, 'done', forced.message)
    rmSync(join(dir, STATE_FILE))
    assert.equal((await dream(options({ consolidate: counting, memory: fakeMemory({ '/a.jsonl': entries(1) }) }))).status, 'not_due')
    const held = acquireLock(dir)!
    assert.equal((await dream(options({ consolidate: counting }))).status, 'locked')
    held.release()
    assert.equal((await dream(options({ consolidate: counting, settings: dreamingSettings({ enabled: false }) }))).status, 'disabled')
    assert.equal(calls, 1)
  })

  /** A consolidation that edits memory through the tools' store, as the agent does. */
  const editing =
    (edit: (store: any) => Promise<unknown>) =>
    async ({ store }: { store: any }) => {
      await edit(store)
      return { ok: true, aborted: false, turns: 1, writes: ['edited'], summary: 'edited' }
    }
  const memoryFile = () => readFileSync(join(dir, 'MEMORY.md'), 'utf8')

  test('the agent gathers evidence with memory_pack: a pack citation verifies as a write\'s evidence', async () => {
    // A pack citation as memory.pack builds it: its follow call expands exactly the cited text.
    const follow = { ref: 'memory.expand', tool: 'memory_expand', args: { session: 'evidence', indices: [0], textOffset: 0, maxChars: EVIDENCE_TEXT.length } }
    const citation = { part: 'match', index: 0, entryId: 'ev1', role: 'user', text: EVIDENCE_TEXT, verified: true, follow }
    const packed: unknown[] = []
    const pack = async (args: unknown) => {
      packed.push(args)
      return { query: 'staging cluster', maxTokens: 2000, tokens: 300, sessions: [{ sessionId: 'evidence', project: '/p', title: 'q', evidence: [citation] }], omitted: [], considered: { hits: 1, sessions: 1, total: 1 }, coverage: {} }
    }
    let given: string[] = []
    // pi-agent-core's Agent as far as runConsolidation uses it, scripted: one pack, then a write citing it.
    class Agent {
      tools: { name: string; execute: (id: string, params: unknown) => Promise<any> }[]
      state = { messages: [] as unknown[] }
      constructor(options: { initialState: { tools: Agent['tools'] } }) {
        this.tools = options.initialState.tools
        given = this.tools.map((t) => t.name)
      }
      subscribe() {}
      abort() {}
      async prompt() {
        const call = (name: string, params: unknown) => this.tools.find((t) => t.name === name)!.execute(name, params)
        const result = await call('memory_pack', { query: 'staging cluster', scope: 'global' })
        const [cited] = result.details.sessions[0].evidence
        await call('memory_add', { target: 'memory', content: 'Staging cluster is kestrel', evidence: [cited.follow.args] })
        // A whole citation (not just its follow.args) is accepted as well.
        await call('memory_add', { target: 'memory', content: 'CI runs on every push', evidence: cited })
        this.state.messages = [{ role: 'assistant', stopReason: 'stop', content: [{ type: 'text', text: 'added' }] }]
      }
    }
    const outcome = await dream(options({ memory: { ...fakeMemory({ '/a.jsonl': entries(3) }), pack: pack as never }, agentCore: { Agent }, force: true }))
    assert.equal(outcome.status, 'done', outcome.message)
    assert.ok(given.includes('memory_pack') && !given.includes('memory_recall'), `packs replace recall's pages: ${given.join(', ')}`)
    assert.match(CONSOLIDATION_SYSTEM_PROMPT, /memory_pack with scope "global"/)
    assert.deepEqual(packed, [{ query: 'staging cluster', scope: 'global' }])
    assert.deepEqual([outcome.applied, outcome.dropped], [2, 0])
    assert.equal(memoryFile(), 'Staging cluster is kestrel\n§\nCI runs on every push')
  })

  test('by default only additions land; replacements and removals await /memory review', async () => {
    writeFileSync(join(dir, 'MEMORY.md'), 'uses npm\n§\nstale fact')
    const store = new MemoryStore({ dir })
    const outcome = await dream(
      options({
        store,
        consolidate: editing(async (s) => {
          assert.equal((await s.remove('memory', 'stale')).removedEntry, 'stale fact')
          await s.add('memory', 'ci runs on push', CITE)
          assert.deepEqual((await s.read('memory')).entries, ['uses npm', 'ci runs on push'], 'the agent reads its staged state')
          assert.equal(memoryFile(), 'uses npm\n§\nstale fact', 'nothing written while the agent runs')
        }),
      }),
    )
    assert.equal(outcome.status, 'done', outcome.message)
    assert.match(outcome.message, /applied 1 addition\(s\); 1 change\(s\) await review \(\/memory review\)/)
    assert.deepEqual([outcome.applied, outcome.proposed], [1, 1])
    assert.equal(memoryFile(), 'uses npm\n§\nstale fact\n§\nci runs on push')
    const listed = await runMemoryCommand(store, 'review')
    assert.match(listed.text, /^Proposals awaiting review \(1\):\n#1 remove \[memory\]: stale fact\n/)
    assert.match((await runMemoryCommand(store, 'review apply 1')).text, /^Applied #1\.\n0 proposal\(s\) awaiting review\.$/)
    assert.equal(memoryFile(), 'uses npm\n§\nci runs on push')
    assert.equal((await runMemoryCommand(store, 'review apply x')).level, 'warning')
  })

  test('autoApply lands the whole consolidation as one batch, or none of it', async () => {
    writeFileSync(join(dir, 'MEMORY.md'), 'uses npm\n§\nstale fact')
    const settings = dreamingSettings({ enabled: true, minTurnsSinceLastRun: 2, autoApply: true, model: { provider: 'p', model: 'm' } })
    const whole = await dream(options({ settings, consolidate: editing(async (s) => (await s.replace('memory', 'npm', 'uses pnpm', CITE), await s.remove('memory', 'stale'))) }))
    assert.match(whole.message, /applied 2 change\(s\)/)
    assert.equal(memoryFile(), 'uses pnpm')
    rmSync(join(dir, STATE_FILE))
    const raced = await dream(
      options({
        settings,
        consolidate: editing(async (s) => {
          await s.add('memory', 'kestrel is the staging cluster', CITE)
          await s.remove('memory', 'pnpm')
          writeFileSync(join(dir, 'MEMORY.md'), 'uses yarn') // another writer, after staging
        }),
      }),
    )
    assert.match(raced.message, /applied 0 change\(s\); not applied — memory: Operation 1 failed: No entry matched 'pnpm'/)
    assert.equal(memoryFile(), 'uses yarn', 'the staged addition did not land without the rest')
  })

  test('/memory review reject drops a proposal and never touches memory; a stale one is refused', async () => {
    writeFileSync(join(dir, 'MEMORY.md'), 'alpha\n§\nbeta')
    const store = new MemoryStore({ dir })
    await store.applyForReview('memory', [{ action: 'remove', oldText: 'alpha' }, { action: 'replace', oldText: 'beta', newContent: 'beta two' }])
    assert.match((await runMemoryCommand(store, 'review reject 1')).text, /^Rejected #1\.\n1 proposal\(s\) awaiting review\.$/)
    await store.replace('memory', 'beta', 'beta, edited by hand')
    const stale = await runMemoryCommand(store, 'review apply all')
    assert.equal(stale.level, 'warning')
    assert.match(stale.text, /Refused #2 \(stale\)/)
    assert.equal(memoryFile(), 'alpha\n§\nbeta, edited by hand')
  })

  test('/memory status shows the dreaming line; /memory dream reports what changed', async () => {
    const store = new MemoryStore({ dir })
    const dreaming = { status: () => 'Dreaming: never ran', dream: async () => ({ status: 'done' as const, message: 'Dreaming read 3 new turn(s): 1 change(s): memory_add memory.', summary: 'Added X.' }) }
    assert.match((await runMemoryCommand(store, 'status', dreaming)).text, /USER\.md: 0 entries .*\nDreaming: never ran$/)
    const reply = await runMemoryCommand(store, 'dream', dreaming, {} as never)
    assert.deepEqual(reply, { text: 'Dreaming read 3 new turn(s): 1 change(s): memory_add memory.\nAdded X.', level: 'info' })
    assert.equal((await runMemoryCommand(store, 'dream')).level, 'warning')
  })

  describe('evidence and provenance', () => {
    const expand = fakeMemory({}).expand as never

    test('distinctive terms drop common and memory words; prefixes of 4+ characters match', () => {
      assert.deepEqual(distinctiveTerms('User prefers pnpm for all builds of the project'), ['pnpm', 'builds'])
      assert.deepEqual(distinctiveTerms('The user always wants it'), [])
      const tokens = new Set(['deploy', 'ci', 'kestrel'])
      assert.ok(holds(tokens, 'deploys') && holds(tokens, 'kestrel'))
      assert.ok(!holds(new Set(['cis']), 'ci') && !holds(new Set(['dep']), 'deploys'), 'short words match exactly only')
    })

    test('a claim verifies only against resolvable cited entries holding enough of its terms', async () => {
      const verified = await verifyEvidence(expand, 'Staging cluster is kestrel', CITE)
      assert.deepEqual(verified, { ok: true, citations: [{ session: 'evidence', entryId: 'ev1' }] }, 'normalized to the session id and entry id')
      const reasons = async (claim: string, evidence: unknown) => {
        const result = await verifyEvidence(expand, claim, evidence)
        assert.equal(result.ok, false, claim)
        return (result as { reason: string }).reason
      }
      assert.match(await reasons('Staging cluster is kestrel', undefined), /no evidence cited/)
      assert.match(await reasons('Staging cluster is kestrel', [{ session: 'evidence', entryIds: ['nope'] }]), /cited entry not found \(address_not_found/)
      assert.match(await reasons('Artifacts are signed with cosign', CITE), /holds none of the entry's distinctive terms \(artifacts, signed, cosign\)/)
      assert.match(await reasons('kestrel runs signed cosign artifacts builds', CITE), /hold 2 of the entry's 6 distinctive terms, 3 needed/)
      assert.match(await reasons('The user wants it', CITE), /no distinctive terms/)
      assert.match(await reasons('kestrel', [{ session: 'evidence' }]), /must name its entries/)
    })

    test('an unverified candidate is dropped and counted; a verified one lands with provenance that /memory why shows', async () => {
      writeFileSync(join(dir, 'MEMORY.md'), 'uses npm')
      const store = new MemoryStore({ dir })
      const results: unknown[] = []
      const outcome = await dream(
        options({
          store,
          consolidate: editing(async (s) => {
            results.push(await s.add('memory', 'Staging cluster is kestrel', CITE))
            results.push(await s.add('memory', 'Artifacts are signed with cosign', CITE))
            results.push(await s.apply('memory', [{ action: 'add', content: 'Deploys need two approvals' }, { action: 'add', content: 'CI runs on push', evidence: CITE }]))
          }),
        }),
      )
      assert.equal(outcome.status, 'done', outcome.message)
      assert.match(outcome.message, /applied 2 addition\(s\); 2 candidate\(s\) dropped: their evidence did not verify/)
      assert.equal(outcome.dropped, 2)
      assert.equal(readState(dir).lastDropped, 2)
      const [kept, dropped, batch] = results as Array<{ success: boolean; code?: string; message?: string }>
      assert.ok(kept.success)
      assert.deepEqual([dropped.success, dropped.code], [false, 'unverified'])
      assert.match(batch.message!, /Dropped for unverified evidence: operation 0 \(no evidence cited/)
      assert.equal(memoryFile(), 'uses npm\n§\nStaging cluster is kestrel\n§\nCI runs on push')
      const read = await store.read('memory', { provenance: true })
      assert.ok(read.success)
      assert.deepEqual(read.provenance!.map((p) => p?.citations), [undefined, [{ session: 'evidence', entryId: 'ev1' }], [{ session: 'evidence', entryId: 'ev1' }]])
      // /memory why shows the cited words (read through memory.expand); the raw call only with --calls.
      const cited = { status: () => '', dream: async () => ({ status: 'done' as const, message: '' }), cited: () => citationReader(fakeMemory({}).expand as never) }
      const why = await runMemoryCommand(store, 'why 2', cited)
      assert.match(why.text, /^memory #2: Staging cluster is kestrel\nProvenance: recorded \d{4}-\d\d-\d\d \d\d:\d\d by dreaming, from:\n- evidence 2026-04-30 09:15 user: "We use pnpm now, CI runs on every push, and the staging cluster is kestrel\."$/)
      assert.ok(!why.text.includes('memory_expand'), why.text)
      const calls = await runMemoryCommand(store, 'why 2 --calls', cited)
      assert.match(calls.text, /\n- evidence 2026-04-30 09:15 user: "We use pnpm .*"\n {2}memory_expand \{"session":"evidence","entryIds":\["ev1"\]\}$/)
      assert.equal((await runMemoryCommand(store, 'why memory --calls 2', cited)).text, calls.text, 'the flag goes anywhere')
      // Without a reader (no session model here) the citation is its ids.
      assert.match((await runMemoryCommand(store, 'why 2')).text, /\n- session evidence, entry ev1$/)
      assert.match((await runMemoryCommand(store, 'why 1')).text, /No provenance: written by hand or by the model directly/)
      assert.equal((await runMemoryCommand(store, 'why 9')).level, 'warning')
      assert.equal((await runMemoryCommand(store, 'why x')).level, 'warning')
    })

    test('a proposal carries its evidence; applying it moves the evidence into the sidecar', async () => {
      writeFileSync(join(dir, 'MEMORY.md'), 'uses npm')
      const store = new MemoryStore({ dir })
      await dream(options({ store, consolidate: editing(async (s) => s.replace('memory', 'npm', 'uses pnpm', CITE)) }))
      const listed = await runMemoryCommand(store, 'review')
      assert.match(listed.text, /#1 replace \[memory\]: uses npm -> uses pnpm\n   evidence: session evidence, entry ev1/)
      await runMemoryCommand(store, 'review apply 1')
      assert.match((await runMemoryCommand(store, 'why 1')).text, /^memory #1: uses pnpm\nProvenance: recorded .+ by dreaming, applied from proposal #1, from:\n- session evidence, entry ev1/)
    })
  })
})

describe('the pi-memory.dreaming settings layer', () => {
  test('read from the agent settings file, interpolated, then parsed with defaults', async () => {
    const { curatedSettings } = await import('../extension/curated/settings.mjs')
    const saved = process.env.PI_CODING_AGENT_DIR
    process.env.PI_CODING_AGENT_DIR = dir
    try {
      writeFileSync(join(dir, 'settings.json'), JSON.stringify({ 'pi-memory': { dreaming: { minHoursSinceLastRun: '${PFM_DREAM_HOURS:-6}', model: { provider: 'p', model: 'm' } } } }))
      const parsed = dreamingSettings(curatedSettings(join(dir, 'project'), false, { PFM_DREAM_HOURS: '' }).dreaming)
      assert.deepEqual(parsed, { enabled: false, enabledSet: false, minHoursSinceLastRun: 6, minTurnsSinceLastRun: 5, model: { provider: 'p', model: 'm' }, autoApply: false, maxOutputTokens: 16_000, maxCost: 0.5 })
    } finally {
      if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR
      else process.env.PI_CODING_AGENT_DIR = saved
    }
  })
})
