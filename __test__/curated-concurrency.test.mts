// Curated memory across processes: concurrent writers lose nothing, a writer
// killed mid-write never leaves a torn file, and the lock interoperates with
// proper-lockfile (the lock of @amaster.ai/pi-memory) in both directions.
import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { afterEach, beforeEach, describe, test } from 'node:test'
import { MemoryStore } from 'pi-fabric-memory'
import { ROOT } from './helpers.mjs'

const WRITER = join(ROOT, '__test__/fixtures/store-writer.mjs')
const PEER = join(ROOT, '__test__/fixtures/lockfile-peer.mjs')

let dir: string
beforeEach(() => {
  dir = join(mkdtempSync(join(tmpdir(), 'pfm-conc-')), 'memories')
  mkdirSync(dir, { recursive: true })
})
afterEach(() => rmSync(join(dir, '..'), { recursive: true, force: true }))

interface Child {
  process: ChildProcess
  /** Resolves with the first stdout line matching `pattern`. */
  line(pattern: RegExp): Promise<string>
  /** Resolves with all stdout when the process exits 0. */
  done: Promise<string>
}

function run(script: string, args: string[]): Child {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line)
    for (const w of waiters.filter((w) => w.pattern.test(line))) w.resolve(line)
  })
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  const done = new Promise<string>((resolve, reject) =>
    child.on('exit', (code, signal) => (code === 0 ? resolve(lines.join('\n')) : reject(new Error(`${script} exited ${code ?? signal}: ${stderr}`)))),
  )
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve) => {
      const seen = lines.find((l) => pattern.test(l))
      if (seen) resolve(seen)
      else waiters.push({ pattern, resolve })
    })
  return { process: child, line, done }
}

const memoryText = () => readFileSync(join(dir, 'MEMORY.md'), 'utf8')
const entriesOf = (text: string) => (text.trim() ? text.split('\n§\n') : [])

describe('concurrent writers', () => {
  test('8 processes × 100 concurrent adds lose nothing and never see drift', { timeout: 120_000 }, async () => {
    const writers = Array.from({ length: 8 }, (_, p) => run(WRITER, ['adds', dir, `p${p}`, '100']))
    const summaries = (await Promise.all(writers.map((w) => w.done))).map((out) => JSON.parse(out))
    assert.deepEqual(summaries.map((s) => [s.ok, s.failures]), Array.from({ length: 8 }, () => [100, []]))
    const entries = entriesOf(memoryText())
    assert.equal(entries.length, 800)
    assert.equal(new Set(entries).size, 800)
    for (let p = 0; p < 8; p++) for (let i = 0; i < 100; i++) assert.ok(entries.includes(`p${p}-${i}`), `p${p}-${i}`)
    const check = await new MemoryStore({ dir, memoryCharLimit: 1_000_000 }).add('memory', 'still writable')
    assert.equal(check.success, true, JSON.stringify(check).slice(0, 300))
    assert.deepEqual(readdirSync(dir).sort(), ['MEMORY.md'], 'no lock, temp or backup files left')
  })
})

describe('concurrent batches', () => {
  test('6 processes × 25 batches of 3 operations serialize with nothing lost', { timeout: 120_000 }, async () => {
    const writers = Array.from({ length: 6 }, (_, p) => run(WRITER, ['batches', dir, `p${p}`, '25']))
    const summaries = (await Promise.all(writers.map((w) => w.done))).map((out) => JSON.parse(out))
    assert.deepEqual(summaries.map((s) => [s.ok, s.failures]), Array.from({ length: 6 }, () => [25, []]))
    const entries = entriesOf(memoryText())
    const expected = Array.from({ length: 6 }, (_, p) =>
      Array.from({ length: 25 }, (_, i) => [`p${p}-${i}-a;`, i < 24 ? `p${p}-${i}-b!;` : `p${p}-${i}-b;`]).flat(),
    ).flat()
    assert.deepEqual([...entries].sort(), expected.sort())
    assert.deepEqual(readdirSync(dir).sort(), ['MEMORY.md'], 'no lock, temp or backup files left')
  })
})

describe('a writer killed with SIGKILL', () => {
  test('mid-batch leaves every batch whole or absent (15 kills at random points)', { timeout: 120_000 }, async () => {
    const window = 3
    for (let round = 0; round < 15; round++) {
      const writer = run(WRITER, ['batch-churn', dir, `r${round}`, String(window)])
      await writer.line(/^ready$/)
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 40))
      writer.process.kill('SIGKILL')
      await writer.done.catch(() => {})
      const pairs = new Map<number, string[]>()
      for (const entry of entriesOf(memoryText())) {
        const match = new RegExp(`^r${round}-(\\d+)-([ab]);$`).exec(entry)
        assert.ok(match, `torn or foreign entry ${JSON.stringify(entry)}`)
        pairs.set(Number(match[1]), [...(pairs.get(Number(match[1])) ?? []), match[2]])
      }
      const ids = [...pairs.keys()].sort((a, b) => a - b)
      for (const id of ids) assert.deepEqual(pairs.get(id), ['a', 'b'], `round ${round}: batch ${id} landed in part`)
      assert.ok(ids.length >= 1 && ids.length <= window, `round ${round}: ${ids.length} batches`)
      ids.forEach((id, i) => assert.equal(id, ids[0] + i, `round ${round}: not contiguous: ${ids}`))
      const lock = join(dir, 'MEMORY.md.lock')
      if (existsSync(lock)) rmSync(lock, { recursive: true })
      rmSync(join(dir, 'MEMORY.md'))
    }
  })


  test('leaves MEMORY.md either old or new, never torn (25 kills at random points)', { timeout: 120_000 }, async (t) => {
    const window = 5
    let killedHoldingLock = 0
    for (let round = 0; round < 25; round++) {
      const writer = run(WRITER, ['churn', dir, `r${round}`, String(window)])
      await writer.line(/^ready$/)
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 40))
      writer.process.kill('SIGKILL')
      await writer.done.catch(() => {})
      // Every entry of this round is `r<round>-<k>;`, a contiguous window in order: a complete state.
      const ids = entriesOf(memoryText()).map((entry) => {
        const match = new RegExp(`^r${round}-(\\d+);$`).exec(entry)
        assert.ok(match || !entry.startsWith(`r${round}-`), `torn entry ${JSON.stringify(entry)}`)
        return match ? Number(match[1]) : undefined
      })
      const own = ids.filter((id): id is number => id !== undefined)
      assert.ok(own.length >= 1 && own.length <= window + 1, `round ${round}: ${own.length} entries`)
      own.forEach((id, i) => assert.equal(id, own[0] + i, `round ${round}: not contiguous: ${own}`))
      // A lock left by the killed holder would be taken over after 30 s; clear it now instead.
      const lock = join(dir, 'MEMORY.md.lock')
      if (existsSync(lock)) {
        killedHoldingLock++
        rmSync(lock, { recursive: true })
      }
      // Start the next round from a clean file so its entries are checked alone.
      rmSync(join(dir, 'MEMORY.md'))
    }
    const temps = readdirSync(dir).filter((name) => name.endsWith('.tmp')).length
    t.diagnostic(`SIGKILL landed while the lock was held in ${killedHoldingLock} of 25 rounds`)
    assert.ok(temps <= 1, `orphaned temp files are swept by the next write (${temps} left; the last round may leave one)`)
  })
})

describe('lock interoperability with proper-lockfile', () => {
  test('a proper-lockfile holder makes our write wait, and nothing is written meanwhile', { timeout: 60_000 }, async () => {
    const store = new MemoryStore({ dir })
    await store.add('memory', 'before')
    const holder = run(PEER, ['hold', join(dir, 'MEMORY.md'), '700'])
    await holder.line(/^locked$/)
    const pending = store.add('memory', 'after the peer released')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(memoryText(), 'before', 'our write waits while the peer holds the lock')
    const result = await pending
    const finished = Date.now()
    const released = Number((await holder.line(/^releasing /)).split(' ')[1])
    await holder.done
    assert.equal(result.success, true)
    assert.ok(finished >= released, `our write finished at ${finished}, before the peer released at ${released}`)
    assert.equal(memoryText(), 'before\n§\nafter the peer released')
  })

  test('our lock makes a proper-lockfile writer wait', { timeout: 60_000 }, async () => {
    // A native writer process is stopped (SIGSTOP) while it holds the lock, so
    // the peer's attempt deterministically meets our lock. (A FIFO as MEMORY.md
    // used to park the write; the bounded reader now refuses FIFOs outright.)
    const file = join(dir, 'MEMORY.md')
    writeFileSync(file, 'earlier')
    const writer = run(WRITER, ['adds', dir, 'ours', '400'])
    const pid = writer.process.pid!
    let held = false
    for (let attempt = 0; attempt < 2000 && !held; attempt++) {
      if (existsSync(`${file}.lock`)) {
        process.kill(pid, 'SIGSTOP')
        held = existsSync(`${file}.lock`) // still ours after the stop: parked inside the lock
        if (!held) process.kill(pid, 'SIGCONT')
      } else await new Promise((resolve) => setTimeout(resolve, 1))
    }
    assert.ok(held, 'the writer was stopped while holding the lock')
    try {
      assert.equal(await run(PEER, ['try', file]).done, 'ELOCKED')
    } finally {
      process.kill(pid, 'SIGCONT')
    }
    assert.deepEqual(JSON.parse(await writer.done).failures, [])
    assert.equal(await run(PEER, ['try', file]).done, 'acquired', 'released after our writes')
    const entries = entriesOf(memoryText())
    assert.equal(entries[0], 'earlier')
    assert.equal(entries.length, 401)
  })

  test('interleaved proper-lockfile and native writers lose no update', { timeout: 120_000 }, async (t) => {
    const peer = run(PEER, ['adds', dir, 'peer', '100'])
    const ours = run(WRITER, ['adds', dir, 'ours', '100'])
    const [peerOut, oursOut] = await Promise.all([peer.done, ours.done])
    assert.deepEqual(JSON.parse(oursOut).failures, [])
    t.diagnostic(`the peer met our lock ${JSON.parse(peerOut).waited} times`)
    const entries = entriesOf(memoryText())
    assert.equal(entries.length, 200)
    for (let i = 0; i < 100; i++) assert.ok(entries.includes(`peer-${i}`) && entries.includes(`ours-${i}`), `entry ${i}`)
  })
})
