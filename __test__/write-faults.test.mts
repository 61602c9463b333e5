// Write faults on real filesystems (issue 11): ENOSPC on a small tmpfs (we run
// as root: mounted for the test, unmounted after) and EACCES as uid 65534 on
// dirs it cannot write, for index records and curated memory writes. Each
// fault is reported (coverage `index_write_failed`, or `io_error`), leaves
// sources and memory files byte-identical with no file of ours left behind,
// and the next call after the fault clears answers as a clean build. (EIO:
// src/write_fault_tests.rs, through a test-only seam.)
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import { MemoryStore, createMemory, inspectCacheRecord } from '../extension/index.mjs'
import { assertWholeListing, INDEX_DIR_LISTING, SESSION_DIRS, tempAgent, worldReadablePackage, type TempAgent } from './helpers.mjs'

const isRoot = process.getuid?.() === 0

/** Every file under `dir` with its bytes. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {}
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) Object.assign(files, snapshot(path))
    else files[path] = readFileSync(path).toString('base64')
  }
  return files
}

/** Mounts a tmpfs of `size` at `dir`; the reason when that is refused. */
function mountTmpfs(dir: string, size: string): string | null {
  mkdirSync(dir, { recursive: true })
  const run = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'tmpfs', dir], { encoding: 'utf8' })
  return run.status === 0 ? null : `mount -t tmpfs refused: ${(run.stderr || run.error?.message || '').trim()}`
}

const umount = (dir: string) => spawnSync('umount', [dir])

function sessions(agent: TempAgent, count: number, words: number) {
  for (let i = 0; i < count; i++) {
    const text = Array.from({ length: words }, (_, j) => `w${(i * 31 + j) % 997}`).join(' ')
    const header = JSON.stringify({ type: 'session', version: 3, id: `s${i}`, timestamp: '2026-01-01T00:00:00.000Z', cwd: agent.cwd })
    const line = JSON.stringify({ type: 'message', id: 'e0', parentId: null, timestamp: '2026-01-01T00:00:01.000Z', message: { role: 'user', content: `${text} session${i}`, timestamp: 1 } })
    agent.write(`s${i}.jsonl`, `${header}\n${line}\n`)
  }
}

function assertOnlyIntactRecords(dir: string) {
  for (const name of readdirSync(dir)) {
    assert.ok(!name.includes('.tmp.'), `temp file left: ${name}`)
    if (name === SESSION_DIRS) assertWholeListing(join(dir, name))
    else if (!name.startsWith('.pi-fabric-memory-index') && name !== INDEX_DIR_LISTING) assert.notEqual(inspectCacheRecord(join(dir, name)), null, `${name} is torn`)
  }
}

const query = { query: 'w5 session3', scope: 'global', pageSize: 50 } as const

describe('ENOSPC on a small tmpfs', () => {
  test('index records: reported, sources untouched, the next call after space frees writes them', async (t: TestContext) => {
    const agent = tempAgent()
    const indexDir = join(agent.root, 'index')
    const refused = mountTmpfs(indexDir, '64k')
    if (refused) return t.skip(refused)
    try {
      sessions(agent, 8, 6_000)
      const sources = snapshot(agent.agentDir)
      const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { indexDir } })
      const clean = await createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { indexDir: join(agent.root, 'clean') } }).recall(query)
      const full = await memory.recall(query)
      assert.ok(full.coverage.reasons.includes('index_write_failed'), JSON.stringify(full.coverage))
      assert.deepEqual([full.total, full.hits], [clean.total, clean.hits])
      assertOnlyIntactRecords(indexDir)
      assert.deepEqual(snapshot(agent.agentDir), sources)
      assert.equal(spawnSync('mount', ['-o', 'remount,size=16m', indexDir]).status, 0)
      assert.deepEqual(await memory.recall(query), clean)
      assertOnlyIntactRecords(indexDir)
      assert.equal(readdirSync(indexDir).filter((n) => n.endsWith('.hot') || n.endsWith('.cold')).length, 8)
    } finally {
      umount(indexDir)
      agent.cleanup()
    }
  })

  test('MEMORY.md and proposals: io_error, files byte-identical, the next write after space frees lands', async (t: TestContext) => {
    const agent = tempAgent()
    const mount = join(agent.root, 'mnt')
    const refused = mountTmpfs(mount, '64k')
    if (refused) return t.skip(refused)
    try {
      const dir = join(mount, 'memories')
      const store = new MemoryStore({ dir })
      for (const fact of ['uses npm', 'stale fact']) assert.equal((await store.add('memory', fact)).success, true)
      const before = snapshot(dir)
      // Fill the filesystem to the last block.
      const filler = join(mount, 'filler')
      try {
        writeFileSync(filler, Buffer.alloc(1 << 20))
      } catch (e: any) {
        assert.equal(e.code, 'ENOSPC')
      }
      const review = [{ action: 'add', content: 'ci on push' }, { action: 'remove', oldText: 'stale fact' }] as const
      for (const result of [
        await store.add('memory', 'a new fact that needs a block'),
        await store.add('user', 'name: Ada'),
        await store.apply('memory', [{ action: 'replace', oldText: 'uses npm', newContent: 'uses pnpm' }]),
        await store.applyForReview('memory', review as never),
      ]) {
        assert.equal(result.success, false, JSON.stringify(result))
        assert.equal(!result.success && result.code, 'io_error', JSON.stringify(result))
      }
      assert.deepEqual(snapshot(dir), before, 'memory files byte-identical, nothing of ours left')
      rmSync(filler)
      assert.equal((await store.add('memory', 'a new fact that needs a block')).success, true)
      assert.equal((await store.applyForReview('memory', review as never)).success, true)
      assert.deepEqual(store.getEntries('memory'), ['uses npm', 'stale fact', 'a new fact that needs a block', 'ci on push'])
      const listed = await store.proposals()
      assert.equal(listed.success && listed.proposals.length, 1, 'the removal waits for review')
    } finally {
      umount(mount)
      agent.cleanup()
    }
  })
})

describe('EACCES as an unprivileged uid', () => {
  test('an index dir and a memory dir it cannot write: reported, nothing changed, recovered once writable', async (t: TestContext) => {
    if (!isRoot) return t.skip('needs root to run a child as uid 65534')
    const agent = tempAgent()
    const pkg = worldReadablePackage()
    try {
      sessions(agent, 4, 300)
      const fabric = join(agent.agentDir, 'fabric')
      const memories = join(agent.root, 'memories')
      for (const dir of [fabric, memories]) mkdirSync(dir, { recursive: true })
      writeFileSync(join(memories, 'MEMORY.md'), 'uses npm')
      for (const dir of [agent.root, agent.agentDir, join(agent.agentDir, 'sessions'), agent.projectDir, fabric, memories]) chmodSync(dir, 0o755)
      const sources = snapshot(agent.agentDir)
      const memoryBefore = snapshot(memories)
      const script = `
        const { createMemory, MemoryStore } = await import(${JSON.stringify(join(pkg, 'dist/extension/index.mjs'))});
        const memory = createMemory({ agentDir: ${JSON.stringify(agent.agentDir)}, cwd: ${JSON.stringify(agent.cwd)} });
        const store = new MemoryStore({ dir: ${JSON.stringify(memories)} });
        process.stdout.write(JSON.stringify({ recall: await memory.recall(${JSON.stringify(query)}), add: await store.add('memory', 'new fact') }));`
      const asNobody = () => {
        const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: pkg, uid: 65534, gid: 65534 })
        assert.equal(run.status, 0, run.stderr)
        return JSON.parse(run.stdout)
      }
      const clean = await createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { indexDir: join(agent.root, 'clean') } }).recall(query)
      const denied = asNobody()
      assert.ok(denied.recall.coverage.reasons.includes('index_write_failed'), JSON.stringify(denied.recall.coverage))
      assert.deepEqual([denied.recall.total, denied.recall.hits], [clean.total, clean.hits])
      assert.deepEqual([denied.add.success, denied.add.code], [false, 'io_error'])
      assert.deepEqual(snapshot(agent.agentDir), sources, 'sources untouched, no index written')
      assert.deepEqual(snapshot(memories), memoryBefore)
      for (const dir of [fabric, memories]) chmodSync(dir, 0o777)
      chmodSync(join(memories, 'MEMORY.md'), 0o666)
      const allowed = asNobody()
      assert.deepEqual(allowed.recall, clean)
      assert.equal(allowed.add.success, true, JSON.stringify(allowed.add))
      assert.equal(readFileSync(join(memories, 'MEMORY.md'), 'utf8'), 'uses npm\n§\nnew fact')
      assertOnlyIntactRecords(join(fabric, 'memory-index'))
    } finally {
      rmSync(pkg, { recursive: true, force: true })
      agent.cleanup()
    }
  })
})
