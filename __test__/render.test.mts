// The recall tools in Pi's TUI: one-line header, one-line collapsed summary,
// a readable expanded view without hashes or follow arguments — rendered with
// Pi's own pi-tui Text at a narrow width, as Pi would.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Text } from '@earendil-works/pi-tui'
import { DEMO_CWD, writeDemoAgentDir } from '../extension/demo.mjs'
import { createMemory, type Memory } from '../extension/memory.mjs'
import { encodeCwd } from '../extension/pi-paths.mjs'
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

test('memory_expand names a session path by project and short id; the path is in the expanded view only', async () => {
  const e = recallRenderers('memory_expand', tui)
  const sessions = await memory.sessions()
  const file = sessions.sessions.find((s) => s.id.startsWith('019a0003'))!.file
  const context = { cwd: DEMO_CWD }
  assert.deepEqual(lines(e.renderCall({ session: file, indices: [4] }, theme, context), 60), ['memory_expand · webshop 019a0003-demo… · #4'])
  const page = await memory.expand({ session: file, indices: [4] })
  assert.ok(!lines(e.renderResult({ details: page }, { expanded: false }, theme, context), 200).join('\n').includes(file))
  assert.ok(lines(e.renderResult({ details: page }, { expanded: true }, theme, context), 400).some((l) => l.endsWith('019a0003-demo-7000-8000-release00003.jsonl')))
  // A followed cold-session hit scopes recall to `session:<path>`: named the same way.
  const r = recallRenderers('memory_recall', tui)
  assert.deepEqual(lines(r.renderCall({ query: 'vite', scope: `session:${file}` }, theme, context), 80), ['memory_recall "vite" · session webshop 019a0003-demo…'])
})

test('global recall hits name their project; project hits of this cwd do not', async () => {
  // A second project beside the demo's, with one session that says "timeout".
  const dir = join(root, 'agent', 'sessions', encodeCwd('/home/demo/shop-api'))
  mkdirSync(dir, { recursive: true })
  const at = Date.UTC(2026, 10, 23, 9, 0, 0)
  writeFileSync(
    join(dir, '2026-11-23T09-00-00-000Z_019a0009-demo-7000-8000-shopapi00009.jsonl'),
    [
      { type: 'session', version: 3, id: '019a0009-demo-7000-8000-shopapi00009', timestamp: new Date(at).toISOString(), cwd: '/home/demo/shop-api' },
      { type: 'message', id: 'a1', parentId: null, timestamp: new Date(at + 1000).toISOString(), message: { role: 'user', content: 'the payment timeout is 5 s', timestamp: at + 1000 } },
    ].map((line) => JSON.stringify(line)).join('\n') + '\n',
  )
  try {
    const r = recallRenderers('memory_recall', tui)
    const args = { query: 'payment timeout', scope: 'global' as const }
    const page = await memory.recall(args)
    const rows = lines(r.renderResult({ details: page }, { expanded: true }, theme, { args, cwd: DEMO_CWD }), 120).filter((l) => /^\d\.\d\d /.test(l))
    assert.ok(rows.some((l) => /^\d\.\d\d 019a0009-demo… #0 shop-api · 2026-11-23 09:00 · user$/.test(l)), rows.join('\n'))
    assert.ok(rows.some((l) => /019a0001-demo… #\d+ webshop · /.test(l)), 'every global hit names its project')
    const own = await memory.recall({ query: 'timeout' })
    const projectRows = lines(r.renderResult({ details: own }, { expanded: true }, theme, { args: { query: 'timeout' }, cwd: DEMO_CWD }), 120)
    assert.ok(projectRows.every((l) => !l.includes('webshop')), 'hits of the current project are not labelled')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('memory_sessions rows show Pi\'s session name, else the first prompt, when the addon reports them', async () => {
  const page = await memory.sessions()
  const s = recallRenderers('memory_sessions', tui)
  const titled = {
    ...page,
    sessions: page.sessions.map((row, i) => (i === 0 ? { ...row, name: 'Release notes 2.4', firstPrompt: 'Collect the merged PRs' } : i === 1 ? { ...row, firstPrompt: 'Why does search miss "café"?' } : row)),
  }
  const rows = lines(s.renderResult({ details: titled }, { expanded: true }, theme), 200).slice(1)
  assert.match(rows[0], /^\S+ \S+  \S+  "Release notes 2\.4" \d+ entries · \/home\/demo\/webshop$/)
  assert.match(rows[1], /  "Why does search miss "café"\?" \d+ entries/)
  assert.match(rows[2], /^\S+ \S+  \S+  \d+ entries · /, 'no title: nothing in its place')
})

