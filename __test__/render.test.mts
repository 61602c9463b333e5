// The recall tools in Pi's TUI: one-line header, one-line collapsed summary,
// a readable expanded view without hashes or follow arguments — rendered with
// Pi's own pi-tui Text at a narrow width, as Pi would.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Text } from '@earendil-works/pi-tui'
import { DEMO_CWD, writeDemoAgentDir } from '../extension/demo.mjs'
import { createMemory, type Memory } from '../extension/memory.mjs'
import { recallRenderers } from '../extension/render.mjs'

const theme = { fg: (_color: string, text: string) => text, bold: (text: string) => text }
const tui = { Text } as never
let root: string
let memory: Memory

before(() => {
  root = mkdtempSync(join(tmpdir(), 'pfm-render-'))
  writeDemoAgentDir(join(root, 'agent'))
  memory = createMemory({ agentDir: join(root, 'agent'), cwd: DEMO_CWD })
})
after(() => rmSync(root, { recursive: true, force: true }))

const lines = (component: unknown, width = 60) => (component as { render(width: number): string[] }).render(width).map((l) => l.trimEnd())

test('memory_recall: a header line, a one-line summary, a readable expanded view', async () => {
  const r = recallRenderers('memory_recall', tui)
  const args = { query: 'timeout', scope: 'project', tool: 'bash' }
  assert.deepEqual(lines(r.renderCall(args, theme), 80), ['memory_recall "timeout" · project · tool=bash'])
  const page = await memory.recall({ query: 'timeout' })
  const collapsed = lines(r.renderResult({ details: page }, { expanded: false }, theme))
  // Four entries say "timeout"; a fifth has it inside an identifier (a part match, ranked last).
  assert.deepEqual(collapsed, ['5 hits · 3/3 sessions · complete'])
  const expanded = lines(r.renderResult({ details: page }, { expanded: true }, theme), 100).join('\n')
  assert.match(expanded, /#4 2026-11-20 09:00 · toolResult tool=bash outcome=failed/)
  assert.ok(!/expectedSourceHash|[0-9a-f]{64}|"args"/.test(expanded), 'no hashes or follow arguments')
  assert.ok(lines(r.renderResult({ details: page }, { expanded: true }, theme), 60).every((l) => l.length <= 60))
})

test('contract errors show the code and what to do, in one line', () => {
  const r = recallRenderers('memory_expand', tui)
  const page = { entries: [], next: null, error: { code: 'stale_pointer', message: 'the session changed' } }
  assert.deepEqual(lines(r.renderResult({ details: page }, { expanded: false }, theme), 200), [
    'stale_pointer: the session changed — the session changed since the pointer was made; recall again',
  ])
})

test('memory_expand and memory_sessions summaries', async () => {
  const sessions = await memory.sessions()
  const s = recallRenderers('memory_sessions', tui)
  assert.deepEqual(lines(s.renderResult({ details: sessions }, { expanded: false }, theme)), ['3 sessions · complete'])
  assert.equal(lines(s.renderResult({ details: sessions }, { expanded: true }, theme), 120).length, 4)
  const e = recallRenderers('memory_expand', tui)
  const page = await memory.expand({ session: sessions.sessions[2].id, indices: [4], before: 1, after: 1 })
  assert.deepEqual(lines(e.renderCall({ session: 'abc', indices: [4] }, theme), 80), ['memory_expand · abc · #4'])
  const shown = new Set(page.entries.map((c) => c.index))
  assert.ok(shown.size >= 2)
  assert.deepEqual(lines(e.renderResult({ details: page }, { expanded: false }, theme)), [
    `${shown.size} entries · #3–#${page.entries.at(-1)!.index}${page.next ? ' · continues' : ''}`,
  ])
  assert.deepEqual(lines(e.renderResult({ details: page }, { isPartial: true }, theme)), ['reading session history…'])
})

test('memory_recall while it waits on indexing: the tool update as one line, at any width', () => {
  const r = recallRenderers('memory_recall', tui)
  const progress = { eligibleSessions: 218, freshSessions: 0, sessionsToIndex: 218, sessionsIndexed: 120, bytesToIndex: 54e6, bytesIndexed: 30e6 }
  const text = 'indexing: 120/218 sessions · 30.0 MB/54.0 MB · 15.0 MB/s · ETA 2s'
  const update = { content: [{ type: 'text', text }], details: { indexing: { ...progress, before: { sessions: 0, bytes: 0 } } } }
  assert.deepEqual(lines(r.renderResult(update, { isPartial: true }, theme), 100), [text])
  const narrow = lines(r.renderResult(update, { isPartial: true }, theme), 40)
  assert.deepEqual(narrow, ['indexing: 120/218 sessions · 30.0 MB/54…'])
  // An update without indexing numbers (or none yet) keeps the generic line.
  assert.deepEqual(lines(r.renderResult({ content: [], details: undefined }, { isPartial: true }, theme)), ['reading session history…'])
})
