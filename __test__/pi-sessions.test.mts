// Sessions written by the real Pi SessionManager (0.80.x): every view we build
// must agree with Pi's own getBranch()/getEntries().
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createMemory, type Memory } from '../extension/index.mjs'
import { allPages, reassemble, runNode22 } from './helpers.mjs'

type Fixture = {
  key: string
  file: string
  id: string
  branchIds: string[]
  allIds: string[]
  entryTypes: string[]
  roles: (string | null)[]
  words: string[]
  [extra: string]: any
}
type Manifest = { agentDir: string; cwd: string; otherCwd: string; fixtures: Record<string, Fixture> }

const CONTENT_TYPES = new Set(['message', 'compaction', 'branch_summary', 'custom_message'])

/** Ids of the records that become entries, in file order, restricted to `ids`. */
function contentIds(fixture: Fixture, ids: string[]): string[] {
  const wanted = new Set(ids)
  return fixture.allIds.filter((id, i) => wanted.has(id) && CONTENT_TYPES.has(fixture.entryTypes[i]) && fixture.roles[i] !== 'system')
}

let root: string
let manifest: Manifest
let memory: Memory

before(() => {
  root = mkdtempSync(join(tmpdir(), 'pfm-pi-'))
  runNode22('__test__/fixtures/write-pi-fixtures.mjs', [join(root, 'agent'), join(root, 'proj')])
  manifest = JSON.parse(readFileSync(join(root, 'agent', 'manifest.json'), 'utf8'))
  memory = createMemory({ agentDir: manifest.agentDir, cwd: manifest.cwd })
})
after(() => rmSync(root, { recursive: true, force: true }))

async function entries(fixture: Fixture, branches: 'active' | 'all') {
  const bound = await memory.expand({ session: fixture.file, branches })
  assert.equal(bound.error, undefined)
  if (!bound.entryCount) return []
  return reassemble(await allPages(memory.expand, { session: fixture.file, branches, entryRange: { first: 0, last: bound.entryCount - 1 } }))
}

describe('sessions written by the real Pi SessionManager', () => {
  test('every fixture: active entries are exactly those on Pi getBranch()', async () => {
    for (const fixture of Object.values(manifest.fixtures)) {
      const topLevel = (await entries(fixture, 'active')).filter((e) => e.parentEntryId === undefined)
      assert.deepEqual(topLevel.map((e) => e.entryId), contentIds(fixture, fixture.branchIds), fixture.key)
    }
  })

  test('every fixture: all mode covers every content record', async () => {
    for (const fixture of Object.values(manifest.fixtures)) {
      const topLevel = (await entries(fixture, 'all')).filter((e) => e.parentEntryId === undefined)
      assert.deepEqual(topLevel.map((e) => e.entryId), contentIds(fixture, fixture.allIds), fixture.key)
    }
  })

  test('every fixture: walk visits each entry once and matches paged expansion', async () => {
    for (const fixture of Object.values(manifest.fixtures)) {
      for (const branches of ['active', 'all'] as const) {
        const expected = await entries(fixture, branches)
        const visited: string[] = []
        const indices: number[] = []
        const result = await memory.walk({ session: fixture.file, branches }, (entry) => {
          visited.push(entry.text)
          indices.push(entry.index)
        })
        assert.deepEqual(result, { visited: expected.length, stopped: false }, `${fixture.key} ${branches}`)
        assert.deepEqual(indices, expected.map((_, i) => i))
        assert.deepEqual(visited, expected.map((e) => e.text))
      }
    }
  })

  test('sessions() lists both projects by scope with active entry counts', async () => {
    const project = await memory.sessions()
    const own = Object.values(manifest.fixtures).filter((f) => f.key !== 'other')
    assert.deepEqual(new Set(project.sessions.map((s) => s.file)), new Set(own.map((f) => f.file)))
    for (const row of project.sessions) {
      const fixture = own.find((f) => f.file === row.file)!
      assert.equal(row.id, fixture.id)
      assert.equal(row.cwd, manifest.cwd)
      assert.equal(row.entryCount, (await entries(fixture, 'active')).length, fixture.key)
    }
    const global = await memory.sessions({ scope: 'global' })
    assert.ok(global.sessions.some((s) => s.file === manifest.fixtures.other.file))
    const other = await memory.expand({ session: manifest.fixtures.other.id, indices: [0] })
    assert.match(other.entries[0].text, /otherproject/)
  })

  test('abandoned siblings are hidden in active mode and visible in all mode', async () => {
    for (const key of ['branched', 'summary']) {
      const fixture = manifest.fixtures[key]
      const abandoned = fixture.abandonedIds as string[]
      const active = await memory.expand({ session: fixture.file, entryIds: [abandoned[0]] })
      assert.equal(active.error?.code, 'address_not_found', key)
      const all = await memory.expand({ session: fixture.file, branches: 'all', entryIds: [abandoned[0]] })
      assert.equal(all.entries[0].entryId, abandoned[0])
      assert.match(all.entries[0].text, new RegExp(fixture.words[1]))
    }
  })

  test('the long entry reassembles to the exact text Pi wrote', async () => {
    const fixture = manifest.fixtures.long
    const pages = await allPages(memory.expand, { session: fixture.file, entryIds: [fixture.longId] })
    assert.ok(pages.length >= 3)
    const [entry] = reassemble(pages)
    assert.equal(entry.text.length, fixture.longText.utf16Length)
    assert.equal(createHash('sha256').update(entry.text).digest('hex'), fixture.longText.sha256)
  })

  test('tools, bash executions and errors carry typed fields', async () => {
    const fixture = manifest.fixtures.tools
    const byId = async (id: string) => (await memory.expand({ session: fixture.file, entryIds: [id] })).entries[0]
    const bashError = await byId(fixture.toolResultIds.bash)
    assert.deepEqual([bashError.ref, bashError.outcome, bashError.isError], ['pi.bash', 'failed', true])
    const grepCall = await byId(fixture.toolCallEntryIds.grep)
    assert.deepEqual([grepCall.role, grepCall.tool, grepCall.ref, grepCall.filesTouched], ['assistant', 'grep', 'pi.grep', ['src']])
    assert.equal((await byId(fixture.bashExecutionIds.failed)).outcome, 'failed')
    assert.equal((await byId(fixture.bashExecutionIds.cancelled)).outcome, 'aborted')
    assert.equal((await byId(fixture.bashExecutionIds.ok)).outcome, 'succeeded')
    const image = (await memory.expand({ session: manifest.fixtures.images.file, entryIds: [manifest.fixtures.images.imageId] })).entries[0]
    assert.equal(image.text.includes('iVBOR'), false, 'image data never enters text')
  })

  test('Fabric traces and branch facts become addressable children', async () => {
    const fixture = manifest.fixtures.fabric
    const all = await entries(fixture, 'active')
    const carrier = all.findIndex((e) => e.entryId === fixture.fabricCarrierId)
    const children = all.slice(carrier + 1).filter((e) => e.parentEntryId === fixture.fabricCarrierId)
    assert.deepEqual(children.map((e) => e.operationAddress), fixture.fabricTrace.operations.map((op: any) => `${fixture.fabricCarrierId}/${op.sequence}`))
    assert.equal(all[carrier + 1].parentEntryId, fixture.fabricCarrierId, 'children follow the carrier')
    const read = children.find((e) => e.ref === 'pi.read')!
    assert.deepEqual(read.filesTouched, ['src/read.ts'])
    const byAddress = await memory.expand({ session: fixture.file, operationAddresses: [read.operationAddress!] })
    assert.equal(byAddress.entries[0].index, read.index)
    const facts = all.filter((e) => e.carrierEntryId === fixture.branchSummaryId)
    assert.deepEqual(facts.map((e) => e.role), ['branchUser', 'fabricPhase', 'fabricOperation', 'fabricRun'])
    const summary = all.find((e) => e.entryId === fixture.branchSummaryId)!
    assert.equal(summary.text, '', 'branch-summary prose is not indexed')
  })

  test('an append by Pi between pages keeps the continuation', async () => {
    const fixture = manifest.fixtures.long
    const first = await memory.expand({ session: fixture.file, entryIds: [fixture.longId] })
    assert.ok(first.next)
    runNode22('__test__/fixtures/append-with-pi.mjs', [fixture.file, 'appended by pi'])
    const second = await memory.expand(first.next!.args)
    assert.equal(second.error, undefined)
    assert.equal(second.entries[0].entryId, fixture.longId)
    assert.equal(second.entries[0].textRange.start, first.entries[0].textRange.end)
    const fresh = await memory.walk({ session: fixture.file }, () => {})
    assert.equal(fresh.error, undefined)
  })
})
