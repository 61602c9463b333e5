// What the model reads of a recall, expand or sessions page (recall/model-view.mts):
// a lean view whose follow calls carry a `pin` instead of a session path and
// two full hashes. Every pinned call must read exactly what the whole page's
// call reads, a rewrite must still be stale, and ten hits must fit in 5,000
// characters (the issue-32 goal; docs/in-pi.md "Prompt footprint").
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { coverageText } from '../extension/present/history.mjs'
import { createMemory } from '../extension/recall/create-memory.mjs'
import { PIN_HASH_DIGITS, pinned, unpinned } from '../extension/recall/pin.mjs'
import { recallTools } from '../extension/recall/tools.mjs'
import { encodeCwd, tempAgent } from './helpers.mjs'

const agent = tempAgent()
after(() => agent.cleanup())

const line = (value: object) => JSON.stringify(value) + '\n'
const header = (id: string) => line({ type: 'session', version: 3, id, timestamp: '2026-11-01T10:00:00.000Z', cwd: agent.cwd })
const message = (id: string, parentId: string | null, role: string, text: string, minute: number) =>
  line({ type: 'message', id, parentId, timestamp: `2026-11-01T10:${String(minute).padStart(2, '0')}:00.000Z`, message: { role, content: [{ type: 'text', text }] } })

// Two sessions, each with long entries that mention "bluefinch" (so ten hits carry full-length snippets).
const filler = (n: number) => Array.from({ length: 90 }, (_, i) => `word${(i * 7 + n) % 50}`).join(' ')
function session(id: string, turns: number): string {
  let text = header(id)
  let parent: string | null = null
  for (let i = 0; i < turns; i++) {
    const role = i % 2 ? 'assistant' : 'user'
    const entry = `${id.slice(0, 4)}e${i}`
    text += message(entry, parent, role, `${filler(i)} the bluefinch cache retry ${i} ${filler(i + 3)}`, i)
    parent = entry
  }
  return text
}
const fileA = agent.write('2026-11-01T10-00-00-000Z_019e9a22-a7d6-7000-8000-00000000000a.jsonl', session('019e9a22-a7d6-7000-8000-00000000000a', 8))
agent.write('2026-11-01T11-00-00-000Z_019e9b31-0000-7000-8000-00000000000b.jsonl', session('019e9b31-0000-7000-8000-00000000000b', 8))

const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
const [recallTool, expandTool, sessionsTool] = recallTools(() => memory)
const run = async (tool: typeof recallTool, args: object) => {
  const result = (await tool.execute('call', args as never, undefined, undefined, undefined as never)) as {
    content: { text: string }[]
    details: any
    isError?: boolean
  }
  return { text: result.content[0].text, view: JSON.parse(result.content[0].text), page: result.details, isError: result.isError }
}
const toolOf = { memory_expand: expandTool, memory_recall: recallTool } as Record<string, typeof recallTool>
/** A lean hit's call: its one tool-named key and the arguments under it. */
const callOf = (hit: Record<string, unknown>) => {
  const [tool, args] = Object.entries(hit).find(([key]) => key in toolOf)!
  return { tool, args: args as Record<string, unknown> }
}

test('ten entry hits fit in 5,000 characters, with no path or full hash, and say nothing the defaults say', async () => {
  const { text, view, page } = await run(recallTool, { query: 'bluefinch', pageSize: 10 })
  assert.equal(page.hits.length, 10)
  assert.ok(text.length <= 5000, `lean page: ${text.length} characters (whole page: ${JSON.stringify(page).length})`)
  assert.ok(!text.includes(agent.projectDir) && !text.includes(page.hits[0].follow.args.expectedSourceHash), 'no path, no full hash')
  for (const hit of view.hits) {
    assert.deepEqual(Object.keys(callOf(hit).args).sort(), ['indices', 'pin'])
    for (const absent of ['isError', 'tier', 'sessionId', 'parentId', 'truncated', 'kind']) assert.ok(!(absent in hit), absent)
    assert.match(hit.at, /^2026-11-01 10:\d\d$/)
  }
  assert.deepEqual(view.coverage, { complete: true })
  assert.deepEqual(Object.keys(view.next), ['memory_recall'])
})

test("every pinned follow reads what the whole page's follow reads", async () => {
  const { view, page } = await run(recallTool, { query: 'bluefinch', pageSize: 10 })
  for (const [i, hit] of view.hits.entries()) {
    const { tool, args } = callOf(hit)
    assert.equal(tool, page.hits[i].follow.tool)
    const pinnedRead = await run(toolOf[tool], args)
    const wholeRead = await memory.expand(page.hits[i].follow.args)
    assert.equal(pinnedRead.isError, undefined, pinnedRead.text)
    assert.deepEqual(pinnedRead.page.entries, wholeRead.entries)
  }
})

test('a continuation page is pinned too, and walks on to the same entries', async () => {
  const first = await run(expandTool, { session: '019e9a22-a7d6', entryRange: { first: 0, last: 7 }, maxEntries: 2 })
  assert.equal(first.isError, undefined, first.text)
  assert.ok(first.view.next?.memory_expand?.pin, first.text)
  const second = await run(expandTool, first.view.next.memory_expand)
  assert.deepEqual(second.page.entries, (await memory.expand(first.page.next.args)).entries)
  assert.ok(!('textRange' in first.view.entries[0]), 'a whole entry states no textRange')
})

test('a rewrite under a pin is stale_pointer; an append is not', async () => {
  const agentB = tempAgent()
  try {
    const file = agentB.write('s.jsonl', session('019ea000-0000-7000-8000-0000000000cc', 4))
    const mem = createMemory({ agentDir: agentB.agentDir, cwd: agentB.cwd })
    const [recall, expand] = recallTools(() => mem)
    const found = (await recall.execute('c', { query: 'bluefinch' } as never, undefined, undefined, undefined as never)) as { content: { text: string }[] }
    const hit = JSON.parse(found.content[0].text).hits[0]
    const { args } = callOf(hit)
    writeFileSync(file, readFileSync(file, 'utf8') + message('tail', '019ee3', 'user', 'later turn', 30))
    const appended = await expand.execute('c', args as never, undefined, undefined, undefined as never)
    assert.equal((appended as { isError?: boolean }).isError, undefined)
    writeFileSync(file, readFileSync(file, 'utf8').replace('word1 ', 'wordX '))
    const rewritten = (await expand.execute('c', args as never, undefined, undefined, undefined as never)) as { details: any }
    assert.equal(rewritten.details.error?.code, 'stale_pointer')
  } finally {
    agentB.cleanup()
  }
})

test('pins: round trip, all-branches mode, encoded parts, and malformed or clashing pins reject with invalid_argument', () => {
  const hash = 'ab'.repeat(32)
  const fingerprint = 'cd'.repeat(32)
  const args = { session: '/x/y.jsonl', branches: 'all', expectedSourceHash: hash, expectedSourceBytes: 42, expectedLineageFingerprint: fingerprint, expectedLineageLeafId: 'a~b', indices: [3] }
  const pin = pinned(args, 'session', 'odd~id')
  assert.deepEqual(pin, { pin: `odd%7Eid~42~${hash.slice(0, PIN_HASH_DIGITS)}~${fingerprint.slice(0, PIN_HASH_DIGITS)}~a%7Eb~all`, indices: [3] })
  assert.deepEqual(unpinned(pin, 'session', 't'), {
    indices: [3],
    session: 'odd~id',
    branches: 'all',
    expectedSourceBytes: 42,
    expectedSourceHash: hash.slice(0, PIN_HASH_DIGITS),
    expectedLineageFingerprint: fingerprint.slice(0, PIN_HASH_DIGITS),
    expectedLineageLeafId: 'a~b',
  })
  assert.equal(unpinned(pinned({ scope: 'session:/p', expectedSourceHash: hash, expectedLineageFingerprint: fingerprint }, 'scope', '019e9a22-a7d6-7000'), 'scope', 't').scope, 'session:019e9a22-a7d6')
  // Unbound calls (no hashes) and unnamed sessions stay as they are.
  assert.deepEqual(pinned({ scope: 'project', offset: 10 }, 'scope', 'x'), { scope: 'project', offset: 10 })
  for (const bad of ['a~1~zz~cd~', `a~1~${hash.slice(0, 15)}~${fingerprint}~`, `~1~${hash}~${fingerprint}~`, `a~1~${hash}~${fingerprint}~l~some`, `a%zz~1~${hash}~${fingerprint}~`]) {
    assert.throws(() => unpinned({ pin: bad }, 'session', 'memory.expand'), { code: 'invalid_argument' }, bad)
  }
  assert.throws(() => unpinned({ pin: `a~1~${hash}~${fingerprint}~`, session: 'b' }, 'session', 'memory.expand'), /already states session/)
})

test('a sessions page names sessions by id, without files or fingerprints', async () => {
  const { text, view } = await run(sessionsTool, {})
  assert.equal(view.sessions.length, 2)
  assert.ok(!text.includes(fileA) && !text.includes('lineageFingerprint'))
  assert.deepEqual(Object.keys(view.sessions[0]).sort(), ['entries', 'firstPrompt', 'id', 'modified'])
  assert.match(view.sessions[0].firstPrompt, /^word\d+ word\d+ .*…$/)
  assert.equal([...view.sessions[0].firstPrompt].length, 120)
})

test("a session's name (Pi's /name) reaches the sessions page as it is appended, and an empty one clears it", async () => {
  const named = (name: string) => line({ type: 'session_info', id: `n${name.length}`, parentId: '019ee7', timestamp: '2026-11-01T10:40:00.000Z', name })
  writeFileSync(fileA, readFileSync(fileA, 'utf8') + named('Checkout timeout'))
  const row = async () => (await memory.sessions()).sessions.find((s) => s.id.startsWith('019e9a22')) as { name?: string }
  assert.equal((await row()).name, 'Checkout timeout')
  writeFileSync(fileA, readFileSync(fileA, 'utf8') + named(''))
  assert.equal((await row()).name, undefined)
})

test("global hits and rows of another project name it; the cwd's own project goes unsaid", async () => {
  const otherDir = join(agent.agentDir, 'sessions', encodeCwd('/home/u/Other Repo'))
  mkdirSync(otherDir, { recursive: true })
  const otherId = '019e9c40-0000-7000-8000-00000000000c'
  const text = line({ type: 'session', version: 3, id: otherId, timestamp: '2026-11-01T12:00:00.000Z', cwd: '/home/u/Other Repo' }) +
    message('othe0', null, 'user', 'the wagtail note', 0)
  writeFileSync(join(otherDir, `2026-11-01T12-00-00-000Z_${otherId}.jsonl`), text)
  const recalled = await run(recallTool, { query: 'wagtail bluefinch', scope: 'global', pageSize: 20 })
  assert.equal(recalled.page.coverage.project.name, 'proj')
  assert.deepEqual(
    [...new Set(recalled.page.hits.map((h: { sessionId: string; project: string }) => `${h.sessionId.slice(0, 8)} ${h.project}`))].sort(),
    ['019e9a22 proj', '019e9b31 proj', '019e9c40 other-repo'],
  )
  assert.deepEqual(recalled.view.hits.filter((h: { project?: string }) => h.project).map((h: { project: string }) => h.project), ['other-repo'])
  const listed = await run(sessionsTool, { scope: 'global' })
  const rows = listed.view.sessions.map((s: { id: string; project?: string }) => `${s.id.slice(0, 8)} ${s.project ?? '-'}`)
  assert.deepEqual(rows.sort(), ['019e9a22 -', '019e9b31 -', '019e9c40 other-repo'])
})

test('in a folder whose git metadata is ambiguous, coverage says the project scope is this folder only', async () => {
  const cwd = join(agent.root, 'broken-checkout')
  mkdirSync(cwd, { recursive: true })
  writeFileSync(join(cwd, '.git'), 'not a gitdir line\n')
  const dir = join(agent.agentDir, 'sessions', encodeCwd(cwd))
  mkdirSync(dir, { recursive: true })
  const id = '019e9d50-0000-7000-8000-00000000000d'
  writeFileSync(join(dir, `${id}.jsonl`), line({ type: 'session', version: 3, id, timestamp: '2026-11-01T12:00:00.000Z', cwd }) + message('brok0', null, 'user', 'the dunlin note', 0))
  const here = createMemory({ agentDir: agent.agentDir, cwd })
  const [recallHere] = recallTools(() => here)
  const { view, page } = await run(recallHere, { query: 'dunlin' })
  assert.deepEqual(page.coverage.project, { name: 'broken-checkout', source: 'cwd', fallback: 'git_file_malformed' })
  assert.deepEqual(view.coverage, { complete: true, project: 'project scope is this folder only (git_file_malformed)' })
  assert.equal(coverageText(page.coverage), 'complete · project scope is this folder only (git_file_malformed)')
  assert.equal(coverageText({ ...page.coverage, project: { name: 'proj', source: 'cwd', fallback: 'cwd_missing' } }), 'complete')
})
