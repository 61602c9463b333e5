// The on-disk index through the public API: tiers, coverage, permissions,
// disposable cache, and two processes indexing one agent dir at once.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readdirSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, test } from 'node:test'
import { inspectCacheRecord } from 'pi-fabric-memory'
import { createMemory } from '../extension/index.mjs'
import { INDEX_DIR_LISTING, ROOT, SESSION_DIRS, tempAgent, type TempAgent } from './helpers.mjs'

const run = promisify(execFile)

function session(id: string, words: string[]): string {
  const header = { type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/home/u/proj' }
  const lines = words.map((text, i) =>
    JSON.stringify({ type: 'message', id: `${id}-${i}`, parentId: i ? `${id}-${i - 1}` : null, timestamp: '2026-01-01T00:00:01.000Z', message: { role: i % 2 ? 'assistant' : 'user', content: text, timestamp: i } }),
  )
  return [JSON.stringify(header), ...lines].join('\n') + '\n'
}

describe('the on-disk index', () => {
  let agent: TempAgent
  const indexDir = () => join(agent.agentDir, 'fabric', 'memory-index')
  // The records, without the index's ownership marker.
  const recordFiles = () =>
    readdirSync(indexDir()).filter((f) => f !== '.pi-fabric-memory-index' && f !== SESSION_DIRS && f !== INDEX_DIR_LISTING)
  before(() => {
    agent = tempAgent()
    for (let i = 0; i < 40; i++) {
      const file = agent.write(`s${String(i).padStart(2, '0')}.jsonl`, session(`s${i}`, [`question ${i} about topic${i % 7}`, `answer ${i}`]))
      const when = new Date(Date.UTC(2026, 0, 1) + i * 60_000)
      utimesSync(file, when, when)
    }
  })
  after(() => agent.cleanup())

  test('sessions() indexes the scope, reports tiers and complete coverage', async () => {
    const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { hotSessions: 5 } })
    const page = await memory.sessions({ scope: 'global' })
    assert.equal(page.sessions.length, 40)
    assert.deepEqual(page.sessions.slice(0, 6).map((s) => [s.id, s.tier]), [
      ['s39', 'hot'], ['s38', 'hot'], ['s37', 'hot'], ['s36', 'hot'], ['s35', 'hot'], ['s34', 'cold'],
    ])
    // The cwd's project: its folder is gone, so the cwd rule decides, and says why.
    const project = { name: 'proj', source: 'cwd', fallback: 'cwd_missing' }
    assert.deepEqual(page.coverage, { complete: true, indexedSessions: 40, eligibleSessions: 40, staleSessions: 0, incompleteSessions: 0, unavailableSessions: 0, reasons: [], project })
    assert.equal(statSync(indexDir()).mode & 0o777, 0o700)
    assert.ok(readdirSync(indexDir()).includes('.pi-fabric-memory-index'))
    const files = recordFiles()
    assert.equal(files.length, 40)
    for (const name of files) assert.equal(statSync(join(indexDir(), name)).mode & 0o777, 0o600)
    const digest = inspectCacheRecord(join(indexDir(), files.find((f) => f.includes('-s00.jsonl'))!)) as any
    assert.equal(digest.cacheVersion, 26)
    // `topic0` is also indexed by its parts, `topic` and `0`, stored marked (U+0001).
    assert.deepEqual(digest.body.Cold.vocabulary, ['\u00010', '\u0001topic', '0', 'about', 'answer', 'question', 'topic0'])
    // One frequency class per term (quarter occurrences, field-weighted), for ranking sessions.
    assert.equal(digest.body.Cold.frequencies.length, digest.body.Cold.vocabulary.length)
    assert.ok(digest.body.Cold.frequencies.every((f: number) => f >= 1 && f <= 255))
    assert.equal(digest.body.Cold.addresses.length, digest.body.Cold.entryCount, 'the JSON view shows the body too')
    assert.equal(digest.cacheBytes, statSync(join(indexDir(), files.find((f) => f.includes('-s00.jsonl'))!)).size)
  })

  test('deleting the index dir is safe: the next call writes identical records back', async () => {
    const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { hotSessions: 5 } })
    const before = await memory.sessions({ scope: 'global' })
    const records = () => recordFiles().sort().map((f) => inspectCacheRecord(join(indexDir(), f)) as any).map(({ body, sourceHash, file }) => ({ body, sourceHash, file }))
    const expected = records()
    rmSync(indexDir(), { recursive: true, force: true })
    assert.deepEqual(await memory.sessions({ scope: 'global' }), before)
    assert.deepEqual(records(), expected)
  })

  test('a budget makes coverage incomplete without losing eligible sessions', async () => {
    const fresh = join(agent.root, 'budget-index')
    const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { hotSessions: 5, maxSyncSessions: 10, indexDir: fresh } })
    const page = await memory.sessions({ scope: 'global' })
    assert.deepEqual([page.coverage.indexedSessions, page.coverage.eligibleSessions, page.coverage.staleSessions], [10, 40, 30])
    assert.deepEqual(page.coverage.reasons, ['max_sync_sessions'])
    assert.equal(page.coverage.complete, false)
  })

  test('two processes indexing at once leave valid records and agree', async () => {
    rmSync(indexDir(), { recursive: true, force: true })
    const script = `
      const { createMemory } = await import(${JSON.stringify(join(ROOT, 'dist/extension/index.mjs'))});
      const memory = createMemory({ agentDir: ${JSON.stringify(agent.agentDir)}, cwd: '/home/u/proj', config: { hotSessions: 5 } });
      const page = await memory.sessions({ scope: 'global' });
      process.stdout.write(JSON.stringify(page));`
    const outputs = await Promise.all([0, 1].map(() => run(process.execPath, ['--input-type=module', '-e', script])))
    const [a, b] = outputs.map((o) => JSON.parse(o.stdout))
    assert.deepEqual(a, b)
    assert.equal(a.coverage.complete, true)
    const files = recordFiles()
    assert.equal(files.length, 40, `no temp files or duplicates: ${files.filter((f) => f.includes('.tmp.')).join(', ')}`)
    for (const name of files) assert.notEqual(inspectCacheRecord(join(indexDir(), name)), null, name)
    const third = JSON.parse((await run(process.execPath, ['--input-type=module', '-e', script])).stdout)
    assert.deepEqual(third, a)
  })
})

/** Session `i`'s own word (letters only: one term). */
const owned = (i: number) => `owned${String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26))}word`

describe('cold bodies share a zstd dictionary', () => {
  let agent: TempAgent
  before(() => {
    agent = tempAgent()
    // 80 cold sessions sharing most of their words: the first 64 bodies train the dictionary, later ones use it.
    for (let i = 0; i < 80; i++) {
      const shared = Array.from({ length: 150 }, (_, w) => `common${(w * 7 + i) % 400}`).join(' ')
      agent.write(`c${String(i).padStart(2, '0')}.jsonl`, session(`c${i}`, [`${shared} ${owned(i)}`, 'noted']))
    }
  })
  after(() => agent.cleanup())

  test('its file sits beside the records, and every record reads back through inspectCacheRecord', async () => {
    const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { hotSessions: 0 } })
    assert.equal((await memory.sessions({ scope: 'global' })).sessions.length, 80)
    const dir = join(agent.agentDir, 'fabric', 'memory-index')
    const names = readdirSync(dir)
    assert.equal(names.filter((n) => /^cold-bodies\.26\.[0-9a-f]{8}\.zdict$/.test(n)).length, 1, names.join(' '))
    const cold = names.filter((n) => n.endsWith('.cold'))
    assert.equal(cold.length, 80)
    for (const name of cold) {
      const record = inspectCacheRecord(join(dir, name)) as any
      assert.ok(record?.body.Cold.vocabulary.some((t: string) => /^owned[a-z]{2}word$/.test(t)), name)
    }
    // A fresh process finds a session written after the training.
    const script = `import { createMemory } from ${JSON.stringify(join(ROOT, 'dist/extension/index.mjs'))}
      const m = createMemory({ agentDir: ${JSON.stringify(agent.agentDir)}, cwd: ${JSON.stringify(agent.cwd)}, config: { hotSessions: 0 } })
      const page = await m.recall({ query: ${JSON.stringify(owned(79))}, scope: 'global' })
      console.log(JSON.stringify({ total: page.total, reasons: page.coverage.reasons }))`
    assert.deepEqual(JSON.parse((await run(process.execPath, ['--input-type=module', '-e', script])).stdout), { total: 1, reasons: [] })
  })
})
