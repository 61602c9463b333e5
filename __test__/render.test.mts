// The recall tools in Pi's TUI: one-line header, one-line collapsed summary,
// a readable expanded view without hashes or follow arguments — rendered with
// Pi's own pi-tui Text at a narrow width, as Pi would.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Text } from '@earendil-works/pi-tui'
import { MemoryStore } from 'pi-fabric-memory'
import { memoryExtension } from '../extension/curated/extension.mjs'
import { DEMO_CWD, writeDemoAgentDir } from '../extension/cli/demo-agent-dir.mjs'
import piFabricMemory from '../extension/index.mjs'
import { createMemoryTools } from '../extension/curated/tools.mjs'
import { createMemory, type Memory } from '../extension/recall/create-memory.mjs'
import { encodeCwd } from '../extension/shared/pi-paths.mjs'
import { recallRenderers } from '../extension/tui/recall.mjs'

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
  assert.equal(lines(s.renderResult({ details: sessions }, { expanded: true }, theme), 250).length, 4)
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
  // The model's pinned calls (recall/model-view.mts) name the session by the pin's id prefix, not "this session".
  const pin = `019a0003-demo~100~${'a'.repeat(16)}~${'b'.repeat(16)}~leaf`
  assert.match(lines(e.renderCall({ pin, indices: [4] }, theme, context), 80)[0], /^memory_expand · 019a0003-demo.* · #4$/)
  assert.match(lines(r.renderCall({ query: 'vite', pin }, theme, context), 80)[0], /^memory_recall "vite" · session 019a0003-demo/)
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
    sessions: page.sessions.map((row, i) => {
      const { name: _n, firstPrompt: _p, ...bare } = row
      return i === 0 ? { ...row, name: 'Release notes 2.4', firstPrompt: 'Collect the merged PRs' } : i === 1 ? { ...row, firstPrompt: 'Why does search miss "café"?' } : bare
    }),
  }
  const rows = lines(s.renderResult({ details: titled }, { expanded: true }, theme), 200).slice(1)
  assert.match(rows[0], /^\S+ \S+  \S+  "Release notes 2\.4" \d+ entries · \/home\/demo\/webshop$/)
  assert.match(rows[1], /  "Why does search miss "café"\?" \d+ entries/)
  assert.match(rows[2], /^\S+ \S+  \S+  \d+ entries · /, 'no title: nothing in its place')
  // The addon reports the first prompt of each session (and Pi's name once it has one).
  const real = lines(s.renderResult({ details: page }, { expanded: true }, theme), 250).slice(1)
  assert.ok(real.some((l) => l.includes('"Prepare the 2.4 release notes from the merged PRs."')), real.join('\n'))
})

/** The curated tools as Pi registers them (with the renderers of the running Pi's pi-tui), and their results. */
function curatedWorld() {
  const registered: any[] = []
  memoryExtension({ registerTool: (tool: any) => registered.push(tool), registerCommand: () => {}, on: () => {}, appendEntry: () => {} } as never, { tui })
  const store = new MemoryStore({ dir: join(mkdtempSync(join(root, 'curated-')), 'memories'), memoryCharLimit: 200 })
  const tools = createMemoryTools(store)
  const run = async (name: string, args: Record<string, unknown>) => {
    const result = await tools.find((t) => t.name === name)!.execute('call', args as never, undefined, undefined, undefined as never)
    const r = registered.find((t) => t.name === name)
    const context = { args, cwd: DEMO_CWD }
    return {
      call: (width = 80) => lines(r.renderCall(args, theme, context), width),
      collapsed: (width = 80) => lines(r.renderResult(result, { expanded: false }, theme, context), width),
      expanded: (width = 80) => lines(r.renderResult(result, { expanded: true }, theme, context), width),
    }
  }
  return { registered, run }
}

test('curated tools: one header line and one summary line each, not the JSON entry list', async () => {
  const { run } = curatedWorld()
  await run('memory_add', { target: 'memory', content: 'Checkout: pricing calls use withTimeout().' })
  const add = await run('memory_add', { target: 'memory', content: 'Search folds accents with NFKD.' })
  assert.deepEqual(add.call(), ['memory_add "Search folds accents with NFKD." · memory'])
  assert.deepEqual(add.collapsed(), ['added · 2 entries · 38% — 76/200 chars'])
  assert.deepEqual(add.expanded(), ['added · 2 entries · 38% — 76/200 chars', '+ Search folds accents with NFKD.'])
  const again = await run('memory_add', { target: 'memory', content: 'Search folds accents with NFKD.' })
  assert.deepEqual(again.collapsed(), ['already saved · 2 entries · 38% — 76/200 chars'])

  const replace = await run('memory_replace', { target: 'memory', oldText: 'NFKD', newContent: 'Search folds accents with NFKD and lowercases.' })
  assert.deepEqual(replace.call(), ['memory_replace "NFKD" → "Search folds accents with NFK…" · memory'])
  assert.deepEqual(replace.collapsed(), ['replaced "Search folds accents with NFKD." · 2 entries · 45% — 91/200 chars'])
  assert.deepEqual(replace.expanded(100).slice(1), ['- Search folds accents with NFKD.', '+ Search folds accents with NFKD and lowercases.'])

  const read = await run('memory_read', { target: 'memory' })
  assert.deepEqual(read.call(), ['memory_read · memory'])
  assert.deepEqual(read.collapsed(), ['2 entries · 45% — 91/200 chars'])
  assert.deepEqual(read.expanded(100).slice(1), ['1. Checkout: pricing calls use withTimeout().', '2. Search folds accents with NFKD and lowercases.'])

  const apply = await run('memory_apply', {
    target: 'memory',
    operations: [
      { action: 'add', content: 'Release notes list PR numbers.' },
      { action: 'remove', oldText: 'lowercases' },
    ],
  })
  assert.deepEqual(apply.call(), ['memory_apply · memory · 2 operations'])
  assert.deepEqual(apply.collapsed(), ['2 operations: 1 added, 1 removed · 2 entries · 37% — 75/200 chars'])
  assert.deepEqual(apply.expanded(100).slice(1), ['+ Release notes list PR numbers.', '- Search folds accents with NFKD and lowercases.'])

  const remove = await run('memory_remove', { target: 'memory', oldText: 'Release' })
  assert.deepEqual(remove.collapsed(), ['removed "Release notes list PR numbers." · 1 entry · 21% — 42/200 chars'])
  assert.deepEqual(remove.expanded().slice(1), ['- Release notes list PR numbers.'])
})

test('curated tool errors: the code, what to do and the usage in one line; the detail when expanded', async () => {
  const { run } = curatedWorld()
  await run('memory_add', { target: 'memory', content: 'Checkout: pricing calls use withTimeout().' })
  const missing = await run('memory_remove', { target: 'memory', oldText: 'valgrind' })
  assert.equal(missing.collapsed(200).length, 1)
  assert.match(missing.collapsed(200)[0], /^no_match: .* — no entry contains that text; memory_read the target; usage 42\/200$/)
  const full = await run('memory_add', { target: 'memory', content: 'x'.repeat(190) })
  assert.equal(full.collapsed(200).length, 1)
  assert.match(full.collapsed(200)[0], /^over_limit: .* — over the size limit; consolidate entries; usage \d+\/200$/)
  assert.ok(full.expanded(200).includes('1. Checkout: pricing calls use withTimeout().'), 'the entries to consolidate')
  const batch = await run('memory_apply', { target: 'memory', operations: [{ action: 'add', content: 'ok' }, { action: 'remove', oldText: 'nope' }] })
  assert.match(batch.collapsed(200)[0], /^no_match \(operation 2 remove\): /)
})

test('a curated tool that threw shows Pi\'s error text, not an empty row', () => {
  const { registered } = curatedWorld()
  const read = registered.find((t) => t.name === 'memory_read')
  const thrown = { content: [{ type: 'text', text: 'pi-fabric-memory: curated memory is not loaded (no session has started)' }], details: {} }
  assert.deepEqual(lines(read.renderResult(thrown, { expanded: false }, theme, { args: { target: 'user' } }), 100), [
    'pi-fabric-memory: curated memory is not loaded (no session has started)',
  ])
})

test('dreaming\'s own memory tools get no renderers (no pi-tui), the package entry passes it to both halves', () => {
  assert.deepEqual(createMemoryTools(() => undefined).filter((t) => 'renderCall' in t), [])
  const registered: any[] = []
  piFabricMemory({ registerTool: (tool: any) => registered.push(tool), registerCommand: () => {}, on: () => {}, appendEntry: () => {} } as never, { tui })
  assert.deepEqual(registered.filter((t) => typeof t.renderCall !== 'function').map((t) => t.name), [])
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
