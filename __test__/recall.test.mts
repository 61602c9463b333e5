// memory.recall through the shim: the seed's examples, cold discovery among
// 1,001 sessions, follow calls of both kinds, the catalog, determinism and
// the event loop staying free during a large recall.
import assert from 'node:assert/strict'
import { utimesSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import type { EntryHit, SessionHit } from 'pi-fabric-memory'
import { createMemory, type Memory } from '../extension/index.mjs'
import { tempAgent, type TempAgent } from './helpers.mjs'

type Line = { id: string; parent: string | null; message: Record<string, unknown> }

function session(id: string, lines: Line[]): string {
  const header = { type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/home/u/proj' }
  const body = lines.map((l, i) => JSON.stringify({ type: 'message', id: l.id, parentId: l.parent, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), message: l.message }))
  return [JSON.stringify(header), ...body].join('\n') + '\n'
}

const user = (id: string, parent: string | null, content: string): Line => ({ id, parent, message: { role: 'user', content } })
const call = (id: string, parent: string, name: string, args: object): Line => ({ id, parent, message: { role: 'assistant', content: [{ type: 'toolCall', id: `c-${id}`, name, arguments: args }] } })
const result = (id: string, parent: string, toolName: string, text: string, isError = false): Line => ({ id, parent, message: { role: 'toolResult', toolCallId: `c-${parent}`, toolName, content: [{ type: 'text', text }], isError } })

function fabricCarrier(id: string, parent: string): Line {
  const op = (sequence: number, ref: string, args: object, outcome: string) => ({ type: 'call', sequence, ref, args, outcome })
  const trace = {
    kind: 'pi-fabric.execution', version: 1, outcome: 'failed', phases: ['run'],
    operations: [op(0, 'agents.run', { task: 'review timeout handling' }, 'failed'), op(1, 'pi.grep', { pattern: 'timeout', path: 'src' }, 'succeeded')],
    counts: { droppedValues: 0, truncatedValues: 0, redactedValues: 0, droppedOperations: 0 },
  }
  return { id, parent, message: { role: 'toolResult', toolCallId: 'c', toolName: 'fabric_exec', content: [{ type: 'text', text: 'ran' }], details: { trace }, isError: false } }
}

describe('memory.recall', () => {
  let agent: TempAgent
  let memory: Memory
  before(() => {
    agent = tempAgent()
    agent.write('main.jsonl', session('main', [
      user('u1', null, 'Decision: "Use CEF" for Stage 1 of the browser shell, says Heddlework.'),
      call('a1', 'u1', 'grep', { pattern: 'timeout', path: 'src' }),
      result('r1', 'a1', 'grep', 'src/net.ts:12 timeout = 5000'),
      fabricCarrier('f1', 'r1'),
      user('u2', 'f1', 'The timeout in agents.run failed again, look at src/net.ts'),
    ]))
    memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
  })
  after(() => agent.cleanup())

  test('the seed examples', async () => {
    const heads = memory.tools.search({ query: 'search source files' })
    assert.ok(heads.length > 0)
    const history = await memory.recall({ scope: 'project', ref: 'pi.grep' })
    assert.deepEqual(history.hits.map((h) => (h as EntryHit).entryId).sort(), ['a1', 'f1/1', 'r1'])
    assert.equal(history.total, 3)
    const failures = await memory.recall({ scope: 'project', query: 'timeout', ref: 'agents.run', outcome: 'failed' })
    assert.deepEqual(failures.hits.map((h) => (h as EntryHit).operationAddress), ['f1/0'])
    const all = await memory.recall({ query: '"Use CEF" "Stage 1" browser Heddlework', queryMatch: 'all' })
    assert.deepEqual(all.hits.map((h) => (h as EntryHit).entryId), ['u1'])
    assert.equal(all.coverage.complete, true)
  })

  test('the result echoes nothing of the request', async () => {
    const page = await memory.recall({ query: 'timeout' })
    assert.deepEqual(Object.keys(page).sort(), ['coverage', 'hits', 'next', 'total'])
    assert.ok(!JSON.stringify(page.hits.map(({ follow, ...rest }) => rest)).includes('"query"'))
  })

  test('every entry hit expands through tools.call(hit.follow)', async () => {
    const page = await memory.recall({ query: 'timeout' })
    for (const hit of page.hits) {
      const detail = (await memory.tools.call(hit.follow)) as { entries: { index: number; text: string }[] }
      assert.equal(detail.entries[0].index, (hit as EntryHit).index)
      assert.match(detail.entries[0].text.toLowerCase(), /timeout/)
    }
  })

  test('catalog description text is never lexical evidence', async () => {
    const catalog = memory.tools.catalog()
    assert.deepEqual(catalog.providers.map((p) => p.name), ['memory'])
    assert.equal(catalog.root.descriptorHash, memory.tools.catalog().root.descriptorHash)
    assert.equal(memory.tools.describe('memory.recall')?.action, 'recall')
    assert.equal((await memory.recall({ query: 'normalized textRange chunks' })).total, 0)
    assert.equal((await memory.recall({ ref: 'pi.write' })).total, 0)
  })

  test('two identical calls give identical bytes', async () => {
    const args = { query: 'timeout src', scope: 'project' as const }
    assert.equal(JSON.stringify(await memory.recall(args)), JSON.stringify(await memory.recall(args)))
  })

  test('bad arguments reject with invalid_argument', async () => {
    await assert.rejects(memory.recall({ query: 'x', queryMode: 'phrase', queryMatch: 'all' }), { code: 'invalid_argument' })
    await assert.rejects(memory.recall({ entryRange: { first: 0, last: 1 } }), /need scope "session:/)
  })
})

describe('cold sessions among 1,001', () => {
  let agent: TempAgent
  let memory: Memory
  before(() => {
    agent = tempAgent()
    for (let i = 0; i < 1001; i++) {
      const words = i === 1000 ? 'the ΩMEGA雪 rarelexeme_777 sighting' : `ordinary note number ${i}`
      const file = agent.write(`s${String(i).padStart(4, '0')}.jsonl`, session(`session-${i}`, [user('u', null, words)]))
      const when = new Date(Date.UTC(2026, 0, 2) - i * 60_000)
      utimesSync(file, when, when)
    }
    memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { hotSessions: 8 } })
  })
  after(() => agent.cleanup())

  test('a Unicode query finds the oldest cold session, and its follow hydrates it', async () => {
    const page = await memory.recall({ query: 'ΩMEGA雪', scope: 'global' })
    assert.equal(page.coverage.complete, true)
    assert.equal(page.coverage.eligibleSessions, 1001)
    const hit = page.hits[0] as SessionHit
    assert.deepEqual([hit.kind, hit.sessionId, hit.tier, hit.matchedTerms], ['session', 'session-1000', 'cold', ['ωmega雪', '雪']])
    const hydrated = (await memory.tools.call(hit.follow)) as { hits: EntryHit[] }
    assert.equal(hydrated.hits[0].kind, 'entry')
    assert.equal(hydrated.hits[0].tier, 'cold')
    assert.match(hydrated.hits[0].snippet, /ΩMEGA雪/)
  })

  test('regex over cold vocabularies', async () => {
    const page = await memory.recall({ query: '^rarelexeme_[0-9]{3}$', queryMode: 'regex', scope: 'global' })
    assert.deepEqual(page.hits.map((h) => h.sessionId), ['session-1000'])
  })

  test('the event loop keeps ticking during a large recall', async () => {
    let ticks = 0
    const timer = setInterval(() => ticks++, 1)
    const started = Date.now()
    const pending = memory.recall({ query: 'ordinary note', scope: 'global', pageSize: 50 })
    await new Promise((resolve) => setImmediate(resolve))
    const page = await pending
    clearInterval(timer)
    assert.equal(page.total, 1000)
    if (Date.now() - started > 20) assert.ok(ticks > 0, 'timers ran while recall was working')
  })
})
