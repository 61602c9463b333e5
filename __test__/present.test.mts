// The text shapes the CLI, Pi's TUI, `/memory` and the model's view share
// (extension/present/): one function each, so the four readers cannot drift.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { ExpandArgs, MemoryCoverage, MemoryHit, RecallPage } from 'pi-fabric-memory'
import { DEMO_CWD, writeDemoAgentDir } from '../extension/cli/demo-agent-dir.mjs'
import { printEntry, printRecall } from '../extension/cli/history.mjs'
import { coverageText, entryLabel } from '../extension/present/history.mjs'
import { plural } from '../extension/present/text.mjs'
import { createMemory } from '../extension/recall/create-memory.mjs'
import { detailText, summaryLine } from '../extension/tui/recall.mjs'

test('plural: one rule for every count word the CLI, the TUI and /memory print', () => {
  assert.equal(plural(1, 'entry'), '1 entry')
  assert.equal(plural(0, 'entry'), '0 entries')
  assert.equal(plural(2, 'session entry'), '2 session entries')
  assert.equal(plural(3, 'session'), '3 sessions')
  assert.equal(plural(2, 'temp file'), '2 temp files')
  // A vowel before the y is a plain s (the TUI's copy made these "keies", "daies").
  assert.equal(plural(2, 'key'), '2 keys')
  assert.equal(plural(2, 'day'), '2 days')
  assert.equal(plural(2, 'child', 'children'), '2 children')
})

test('entryLabel: the role / tool= / outcome= words of an entry, the ones it has', () => {
  assert.equal(entryLabel({ role: 'toolResult', tool: 'bash', outcome: 'failed' }), 'toolResult tool=bash outcome=failed')
  assert.equal(entryLabel({ role: 'assistant', tool: null, outcome: null }), 'assistant')
  assert.equal(entryLabel({ role: null, tool: 'read', outcome: 'succeeded' }), 'tool=read outcome=succeeded')
  assert.equal(entryLabel({ role: null, tool: null, outcome: null }), '')
})

/** What `print` wrote with console.log, one string per call. */
function printed(print: () => void): string[] {
  const lines: string[] = []
  const log = console.log
  console.log = (...args: unknown[]) => void lines.push(args.join(' '))
  try {
    print()
  } finally {
    console.log = log
  }
  return lines
}

test('a hit and an entry carry the same label in the CLI and in the TUI', async () => {
  const root = mkdtempSync(join(tmpdir(), 'pfm-present-'))
  try {
    writeDemoAgentDir(join(root, 'agent'))
    const memory = createMemory({ agentDir: join(root, 'agent'), cwd: DEMO_CWD })
    const recalled = await memory.recall({ ref: 'pi.bash', outcome: 'failed' })
    const hit = recalled.hits.find((h) => h.kind === 'entry')!
    assert.equal(hit.kind, 'entry')
    const label = 'toolResult tool=bash outcome=failed'
    assert.equal(entryLabel(hit), label)
    const expanded = await memory.expand(hit.follow.args as ExpandArgs)
    const entry = expanded.entries.find((e) => e.index === hit.index)!
    const theme = { fg: (_color: string, text: string) => text, bold: (text: string) => text }
    const cliHit = printed(() => printRecall(recalled, undefined))[0]
    const cliEntry = printed(() => printEntry(entry))[0]
    const tuiHit = detailText('memory_recall', recalled, theme).split('\n')[1]
    const tuiEntry = detailText('memory_expand', { ...expanded, entries: [entry] }, theme).split('\n')[2]
    assert.ok(cliHit.endsWith(`  ${label}`), cliHit)
    assert.equal(cliEntry, `#${entry.index} ${entry.entryId} ${label}`)
    assert.ok(tuiHit.endsWith(` · ${label}`), tuiHit)
    assert.ok(tuiEntry.endsWith(` · ${label}`), tuiEntry)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
})

test('coverageText: one wording of coverage for the CLI and the TUI', () => {
  const coverage = (complete: boolean, reasons: string[], staleSessions: number) =>
    ({ complete, reasons, staleSessions, indexedSessions: 3 - staleSessions, eligibleSessions: 3, incompleteSessions: 0, unavailableSessions: 0 }) as MemoryCoverage
  const cases: Array<[MemoryCoverage, string]> = [
    [coverage(true, [], 0), 'complete'],
    [coverage(false, ['max_sync_sessions', 'regex_timeout'], 1), 'incomplete: max_sync_sessions, regex_timeout'],
    // Stale sessions without a reason code (doctor's probe drops its budget reasons) are named, in the TUI too.
    [coverage(false, [], 2), 'incomplete: 2 sessions not indexed yet'],
    [coverage(false, [], 0), 'incomplete'],
  ]
  const theme = { fg: (_color: string, text: string) => text, bold: (text: string) => text }
  for (const [c, text] of cases) {
    assert.equal(coverageText(c), text)
    const recall = { hits: [], total: 0, next: null, coverage: c } as unknown as RecallPage
    assert.equal(summaryLine('memory_recall', recall, theme), `0 hits · ${c.indexedSessions}/3 sessions · ${text}`)
    assert.equal(summaryLine('memory_sessions', { scope: 'project', branches: 'active', sessions: [], coverage: c }, theme), `0 sessions · ${text}`)
    assert.deepEqual(printed(() => printRecall(recall, undefined)), [`0 of 0 hits · ${c.indexedSessions}/3 sessions indexed · coverage ${text}`])
  }
})

test("the CLI's hit line names the session as the TUI's does: a long id by its prefix, a short one whole", () => {
  const hit = (sessionId: string) =>
    ({ kind: 'entry', sessionId, index: 4, score: 1.5, tier: 'hot', timestamp: null, role: 'user', tool: null, outcome: null, snippet: 'the snippet' }) as unknown as MemoryHit
  const coverage = { complete: true, reasons: [], staleSessions: 0, indexedSessions: 1, eligibleSessions: 1, incompleteSessions: 0, unavailableSessions: 0 }
  const page = { hits: [hit('019a0001-demo-7000-8000-checkout0001'), hit('sess-a')], total: 2, next: null, coverage } as unknown as RecallPage
  const [long, , short] = printed(() => printRecall(page, undefined))
  assert.equal(long, `  1.50  019a0001-demo… #4  — hot  user`)
  assert.equal(short, `  1.50  sess-a #4  — hot  user`)
})
