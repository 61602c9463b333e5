// The one reader of expand pages (extension/recall/walk.mts readEntries):
// memory.walk, the CLI's expand and dreaming's evidence check read through
// it, and the codemode walk a script pastes (WALK_SOURCE, a self-contained
// string) must behave as it does: both run here over the same fake pages.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { ExpandArgs, ExpandedEntry, ExpandPage, MemoryError } from 'pi-fabric-memory'
import { DEMO_CWD, writeDemoAgentDir } from '../extension/cli/demo-agent-dir.mjs'
import { expandAll } from '../extension/cli/history.mjs'
import { verifyEvidence } from '../extension/dreaming/evidence.mjs'
import { createMemory } from '../extension/recall/create-memory.mjs'
import { WALK_SOURCE } from '../extension/recall/namespace.mjs'
import { readEntries, walk, type WalkResult } from '../extension/recall/walk.mjs'

/** A chunk of entry `index`: `text` at `start`, the entry ending with it when `complete`. */
function chunk(index: number, text: string, start = 0, complete = true): ExpandedEntry {
  return {
    index, entryId: `e${index}`, parentId: null, operationAddress: null, type: 'message', role: 'user', tool: null, ref: null,
    provider: null, action: null, outcome: null, timestamp: null, isError: false, filesTouched: [],
    text, textRange: { start, end: start + text.length, complete } as ExpandedEntry['textRange'],
  }
}

const BINDING = { session: '/s/walk.jsonl', sessionId: 'walk-1', sourceHash: 'a'.repeat(64), lineageFingerprint: 'b'.repeat(64), branches: 'active' as const }

/** Pages of one read: page k's `next` is `{cursor: k + 1}` while another page follows. */
function pagesOf(pages: Array<ExpandedEntry[] | MemoryError>, entryCount = 3) {
  const calls: unknown[] = []
  const expand = async (args: ExpandArgs): Promise<ExpandPage> => {
    // `branches` defaults to "active" in the addon: a call that leaves it out asks the same.
    calls.push(JSON.parse(JSON.stringify({ ...args, branches: args.branches ?? 'active' })))
    const cursor = (args as { cursor?: number }).cursor
    // The no-selection call a whole-session walk binds with.
    if (cursor === undefined && !args.entryRange && !args.indices && !args.entryIds) return { ...BINDING, entryCount, entries: [], next: null }
    const at = cursor ?? 0
    const page = pages[at]
    const base = { ...BINDING, entryCount }
    if (!Array.isArray(page)) return { ...base, entries: [], next: null, error: page }
    const next = at + 1 < pages.length ? { tool: 'memory_expand', ref: 'memory.expand', args: { cursor: at + 1 } } : null
    return { ...base, entries: page, next } as ExpandPage
  }
  return { expand, calls }
}

const SCENARIOS: Record<string, Array<ExpandedEntry[] | MemoryError>> = {
  'whole entries and one in three chunks over three pages': [
    [chunk(0, 'short one'), chunk(1, 'abc', 0, false)],
    [chunk(1, 'def', 3, false)],
    [chunk(1, 'gh', 6), chunk(2, 'short two')],
  ],
  'a chunk at the wrong offset': [[chunk(0, 'ok'), chunk(1, 'abc', 0, false)], [chunk(1, 'xyz', 4)]],
  'another entry while one is open': [[chunk(1, 'abc', 0, false)], [chunk(2, 'def')]],
  'a first chunk that does not start at 0': [[chunk(0, 'ok')], [chunk(1, 'late', 5)]],
  'the last entry left open': [[chunk(0, 'ok'), chunk(1, 'abc', 0, false)]],
  'a contract error on a later page': [[chunk(0, 'ok'), chunk(1, 'abc', 0, false)], { code: 'stale_pointer', message: 'the session changed' }],
}

type Outcome = { result: { visited: number; stopped: boolean; error?: string }; seen: unknown[]; calls: unknown[] }

const outcome = (result: WalkResult, seen: ExpandedEntry[], calls: unknown[]): Outcome => ({
  result: { visited: result.visited, stopped: result.stopped, ...(result.error ? { error: result.error.code } : {}) },
  seen: seen.map((e) => ({ index: e.index, text: e.text, textRange: e.textRange })),
  calls,
})

/** The codemode `walk` and `walkSession`, defined by WALK_SOURCE over a script's `tools`. */
function codemode(expand: (args: ExpandArgs) => Promise<ExpandPage>) {
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (tools: unknown) => Promise<{
    walk: (args: unknown, visit: (entry: ExpandedEntry) => unknown) => Promise<WalkResult>
    walkSession: (session: string, visit: (entry: ExpandedEntry) => unknown) => Promise<WalkResult>
  }>
  return new AsyncFunction('tools', `${WALK_SOURCE}\nreturn { walk, walkSession }`)({ memory_expand: expand })
}

const stopAt = (n: number | undefined, seen: ExpandedEntry[]) => (entry: ExpandedEntry) => {
  seen.push(entry)
  return n !== undefined && seen.length === n ? false : undefined
}

for (const [name, pages] of Object.entries(SCENARIOS)) {
  for (const stop of [undefined, 1]) {
    test(`readEntries and the codemode walk agree: ${name}${stop ? ', the visitor stopping at the first entry' : ''}`, async () => {
      const ours = pagesOf(pages)
      const seen: ExpandedEntry[] = []
      const mine = outcome(await readEntries(ours.expand, { cursor: 0 } as ExpandArgs, stopAt(stop, seen)), seen, ours.calls)
      const theirs = pagesOf(pages)
      const scriptSeen: ExpandedEntry[] = []
      const script = outcome(await (await codemode(theirs.expand)).walk({ cursor: 0 }, stopAt(stop, scriptSeen)), scriptSeen, theirs.calls)
      assert.deepEqual(mine, script)
    })
  }
}

test('the readers agree on the scenarios the test names (a guard against a scenario that proves nothing)', async () => {
  const codes: Record<string, string | undefined> = {}
  for (const [name, pages] of Object.entries(SCENARIOS)) codes[name] = (await readEntries(pagesOf(pages).expand, { cursor: 0 } as ExpandArgs, () => {})).error?.code
  assert.deepEqual(codes, {
    'whole entries and one in three chunks over three pages': undefined,
    'a chunk at the wrong offset': 'walk_discontinuity',
    'another entry while one is open': 'walk_discontinuity',
    'a first chunk that does not start at 0': 'walk_discontinuity',
    'the last entry left open': 'walk_incomplete',
    'a contract error on a later page': 'stale_pointer',
  })
})

test('memory.walk of a whole session and the codemode walkSession bind and read alike', async () => {
  const pages = SCENARIOS['whole entries and one in three chunks over three pages']
  const ours = pagesOf(pages)
  const seen: ExpandedEntry[] = []
  const mine = outcome(await walk(ours.expand, { session: 'walk-1' }, stopAt(undefined, seen)), seen, ours.calls)
  const theirs = pagesOf(pages)
  const scriptSeen: ExpandedEntry[] = []
  const script = outcome(await (await codemode(theirs.expand)).walkSession('walk-1', stopAt(undefined, scriptSeen)), scriptSeen, theirs.calls)
  assert.deepEqual(mine, script)
  assert.deepEqual(mine.result, { visited: 3, stopped: false })
  assert.deepEqual(mine.calls[1], { session: BINDING.session, branches: 'active', expectedSourceHash: BINDING.sourceHash, expectedLineageFingerprint: BINDING.lineageFingerprint, entryRange: { first: 0, last: 2 } })
})

test('readEntries: maxPages ends a read that goes on with walk_incomplete', async () => {
  const { expand, calls } = pagesOf(SCENARIOS['whole entries and one in three chunks over three pages'])
  const result = await readEntries(expand, { cursor: 0 } as ExpandArgs, () => {}, { maxPages: 2 })
  assert.deepEqual(result, { visited: 1, stopped: false, error: { code: 'walk_incomplete', message: 'The entries did not end within 2 pages.' } })
  assert.equal(calls.length, 2)
})

test("the CLI's expand checks continuity: a discontinuity is the first page with the error, no entries", async () => {
  const { expand } = pagesOf(SCENARIOS['a chunk at the wrong offset'])
  const page = await expandAll({ expand }, { cursor: 0 } as ExpandArgs)
  assert.deepEqual(page.entries, [])
  assert.equal(page.next, null)
  assert.deepEqual(page.error, { code: 'walk_discontinuity', message: 'Entry 1 continued at entry 1 offset 4.' })
  // A contract error is the page that carries it, as the API returned it.
  const stale = await expandAll({ expand: pagesOf(SCENARIOS['a contract error on a later page']).expand }, { cursor: 0 } as ExpandArgs)
  assert.deepEqual(stale, { ...BINDING, entryCount: 3, entries: [], next: null, error: { code: 'stale_pointer', message: 'the session changed' } })
})

test("the CLI's expand joins a long entry's chunks into the whole entry memory.walk visits", async () => {
  const root = mkdtempSync(join(tmpdir(), 'pfm-walk-'))
  try {
    writeDemoAgentDir(join(root, 'agent'))
    const memory = createMemory({ agentDir: join(root, 'agent'), cwd: DEMO_CWD })
    // The checkout session's failed test run is 264 characters: two 256-character pages.
    const session = '019a0001-demo-7000-8000-checkout0001'
    const walked: ExpandedEntry[] = []
    await memory.walk({ session }, (entry) => void walked.push(entry))
    const long = walked.reduce((a, b) => (b.text.length > a.text.length ? b : a))
    assert.ok(long.text.length > 256, `the demo has an entry longer than one 256-character page (${long.text.length})`)
    const first = await memory.expand({ session, indices: [long.index], maxChars: 256 })
    assert.ok(first.next, 'the entry comes in chunks')
    const page = await expandAll(memory, { session, indices: [long.index], maxChars: 256 })
    assert.deepEqual(page.entries, [long])
    assert.deepEqual(page.entries[0].textRange, { start: 0, end: long.text.length, total: long.text.length, complete: true })
    assert.equal(page.next, null)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
})

test("dreaming's evidence check reads citations through the same reader: a discontinuity is not evidence", async () => {
  const pages = [[{ ...chunk(0, 'deploys run through the blue-green pipeline', 0, false) }], [{ ...chunk(0, ' nightly', 60) }]]
  const { expand } = pagesOf(pages)
  const verified = await verifyEvidence(expand, 'Deploys use the blue-green pipeline', { session: 'walk-1', entryIds: ['e0'] })
  assert.deepEqual(verified, { ok: false, reason: 'cited entry not found (walk_discontinuity: Entry 0 continued at entry 0 offset 60.)' })
})
