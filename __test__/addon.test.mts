// The addon through the shim's createMemory, over hand-made and reference files.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { appendFileSync, copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { MemoryEngine, sessionHeader, version } from 'pi-fabric-memory'
import { createMemory, type Memory } from '../extension/index.mjs'
import { allPages, reassemble, ROOT, tempAgent, type TempAgent } from './helpers.mjs'

const header = (id: string, extra = '') =>
  `{"type":"session","version":3,"id":"${id}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/u/proj"${extra}}\n`
const user = (id: string, parent: string | null, text: string) =>
  JSON.stringify({ type: 'message', id, parentId: parent, timestamp: '2026-01-01T00:00:01.000Z', message: { role: 'user', content: text, timestamp: 1 } }) + '\n'

describe('the native addon', () => {
  test('loads and reports its version', () => {
    assert.match(version(), /^\d+\.\d+\.\d+/)
    assert.equal(typeof MemoryEngine, 'function')
  })

  test('ES modules get every export of the CommonJS addon, the same objects (without its export lexer)', async () => {
    const commonJs = createRequire(import.meta.url)('pi-fabric-memory/native')
    const internal = new Set(['OperationTask', 'StoreTask']) // napi's task classes, not declared in index.d.ts
    const root: Record<string, unknown> = await import('pi-fabric-memory')
    const native: Record<string, unknown> = await import('pi-fabric-memory/native')
    for (const name of Object.keys(commonJs).filter((n) => !internal.has(n))) {
      assert.equal(root[name], commonJs[name], `pi-fabric-memory exports ${name}`)
      assert.equal(native[name], commonJs[name], `pi-fabric-memory/native (import) exports ${name}`)
    }
    assert.equal(native.default, commonJs, 'the default import is the CommonJS exports, as before the ESM entry')
  })

  test('the loader takes the binary beside it without compiling napi-rs\'s loader, which yields the same module', () => {
    // A fresh process each: which loader ran shows in its require cache.
    const probe = (env: Record<string, string> = {}) =>
      JSON.parse(
        execFileSync(
          process.execPath,
          ['-e', `const b = require('./binding.cjs'); const viaIndex = Object.keys(require.cache).some((f) => /[\\/]index\\.js$/.test(f)); console.log(JSON.stringify({ viaIndex, same: require('./index.js') === b, target: b.__napiBindingTarget, keys: Object.keys(b) }))`],
          { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } },
        ),
      )
    const direct = probe()
    assert.equal(direct.viaIndex, false, 'binding.cjs loaded the binary itself')
    assert.equal(direct.same, true, 'index.js, loaded afterwards, hands back the very same exports')
    assert.equal(direct.target, 'native')
    // napi-rs's overrides stay its loader's: an explicit library path goes through index.js.
    const binary = readdirSync(ROOT).find((n) => n.endsWith('.node'))!
    const overridden = probe({ NAPI_RS_NATIVE_LIBRARY_PATH: join(ROOT, binary) })
    assert.equal(overridden.viaIndex, true, 'NAPI_RS_NATIVE_LIBRARY_PATH is index.js\'s to honour')
    assert.deepEqual(overridden.keys, direct.keys, 'either way the same exports, __napiBindingTarget included')
  })

  test('importing the package root or ./native loads neither node:crypto nor the stream modules', { skip: process.versions.bun ? 'Bun does not list its built-in modules' : false }, () => {
    // Both are heavy to load (the bench's import rows); nothing they export needs either before it is called.
    for (const specifier of ['pi-fabric-memory', 'pi-fabric-memory/native']) {
      const script = `const before = new Set(process.moduleLoadList); await import(${JSON.stringify(specifier)}); console.log(JSON.stringify(process.moduleLoadList.filter((m) => !before.has(m))))`
      const loaded: string[] = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' }))
      assert.deepEqual(loaded.filter((m) => /\bcrypto\b|\bstreams?\b/.test(m)), [], `${specifier} loaded: ${loaded.join(', ')}`)
    }
  })

  test('rejects bad configuration with a clear error', () => {
    assert.throws(() => new MemoryEngine({ config: { maxEntryChars: 5 } }), /memory\.maxEntryChars must be an integer from 100/)
  })
  test('sessionHeader reads a header as recall does: blank lines skipped, a non-session or a FIFO is null, never a hang', { skip: process.platform === 'win32' ? 'no mkfifo' : false }, () => {
    const agent = tempAgent()
    try {
      const file = agent.write('a.jsonl', '\n' + header('abc', ',"parentSession":"/p/x.jsonl"') + user('u1', null, 'hi'))
      assert.deepEqual({ ...sessionHeader(file) }, { id: 'abc', cwd: '/home/u/proj', timestamp: '2026-01-01T00:00:00.000Z', version: 3, parentSession: '/p/x.jsonl' })
      assert.equal(sessionHeader(agent.write('b.jsonl', '{"type":"message","id":"x"}\n')), null)
      const fifo = join(agent.root, 'fifo.jsonl')
      execFileSync('mkfifo', [fifo])
      assert.equal(sessionHeader(fifo), null)
      assert.equal(sessionHeader(join(agent.root, 'missing.jsonl')), null)
    } finally {
      agent.cleanup()
    }
  })
})

describe('the reference v3 sample', () => {
  let agent: TempAgent
  let memory: Memory
  let file: string
  before(() => {
    agent = tempAgent()
    file = join(agent.projectDir, 'sample.jsonl')
    copyFileSync(join(ROOT, '__test__/fixtures/pi-sample-v3.jsonl'), file)
    memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
  })
  after(() => agent.cleanup())

  test('sessions lists it with active and all entry counts', async () => {
    const active = await memory.sessions()
    assert.deepEqual(active.sessions.map((s) => [s.id, s.file, s.entryCount, s.branches]), [
      ['01a22cf5-088c-778f-8202-9f8ba010db1a', file, 3, 'active'],
    ])
    const all = await memory.sessions({ branches: 'all' })
    assert.equal(all.sessions[0].entryCount, 7)
    assert.notEqual(all.sessions[0].lineageFingerprint, active.sessions[0].lineageFingerprint)
  })

  test('active mode returns the leaf path only', async () => {
    const page = await memory.expand({ session: '01a22cf5-088c-778f-8202-9f8ba010db1a', entryRange: { first: 0, last: 2 } })
    assert.deepEqual(page.entries.map((e) => e.entryId), ['fac9ad57', '6e35b082', '1cd3714e'])
    assert.equal(page.entries[0].text, 'fix the bug in src/a.ts')
    assert.equal(page.sourceHash?.length, 64)
  })

  test('all mode exposes typed tool fields', async () => {
    const page = await memory.expand({ session: file, branches: 'all', indices: [1, 2, 3] })
    const [call, result, bash] = page.entries
    assert.deepEqual([call.tool, call.ref, call.provider, call.action, call.filesTouched], ['edit', 'pi.edit', 'pi', 'edit', ['src/a.ts']])
    assert.deepEqual([result.role, result.outcome, result.isError], ['toolResult', 'succeeded', false])
    assert.deepEqual([bash.role, bash.tool, bash.outcome], ['bashExecution', 'bash', 'succeeded'])
    assert.equal(call.parentId, 'fac9ad57')
  })
})

describe('bad input is skipped, never fatal', () => {
  let agent: TempAgent
  let memory: Memory
  before(() => {
    agent = tempAgent()
    memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
  })
  after(() => agent.cleanup())

  test('malformed lines, CRLF and invalid UTF-8 lines are skipped', async () => {
    const bytes = Buffer.concat([
      Buffer.from(header('bad-lines').replace('\n', '\r\n')),
      Buffer.from(user('a', null, 'first')),
      Buffer.from('{not json\n'),
      Buffer.from([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d, 0x0a]),
      Buffer.from(user('b', 'a', 'second').replace('\n', '\r\n')),
    ])
    agent.write('bad-lines.jsonl', bytes)
    const page = await memory.expand({ session: 'bad-lines', entryRange: { first: 0, last: 1 } })
    assert.deepEqual(page.entries.map((e) => e.text), ['first', 'second'])
  })

  test('a parent cycle terminates', async () => {
    agent.write('cycle.jsonl', header('cycle') + user('a', 'b', 'one') + user('b', 'a', 'two'))
    const page = await memory.expand({ session: 'cycle', entryRange: { first: 0, last: 1 } })
    assert.deepEqual(page.entries.map((e) => e.text), ['one', 'two'])
  })

  test('duplicate ids resolve to the last record; all mode reports ambiguity', async () => {
    agent.write('dups.jsonl', header('dups') + user('a', null, 'old') + user('a', null, 'new'))
    const active = await memory.expand({ session: 'dups', entryIds: ['a'] })
    assert.equal(active.entries[0].text, 'new')
    const all = await memory.expand({ session: 'dups', branches: 'all', entryIds: ['a'] })
    assert.equal(all.error?.code, 'ambiguous_address')
    assert.equal(all.error?.matches, 2)
    assert.deepEqual(all.entries, [])
  })

  test('empty, header-only and non-session files', async () => {
    agent.write('empty.jsonl', '')
    agent.write('header-only.jsonl', header('header-only'))
    agent.write('not-a-session.jsonl', '{"hello":"world"}\n')
    const listed = (await memory.sessions()).sessions.map((s) => s.id)
    assert.ok(listed.includes('header-only'))
    assert.ok(!listed.some((id) => id === 'empty' || id === 'not-a-session'))
    const headerOnly = await memory.expand({ session: 'header-only' })
    assert.equal(headerOnly.entryCount, 0)
    assert.deepEqual(await memory.walk({ session: 'header-only' }, () => assert.fail('no entries')), { visited: 0, stopped: false })
    const empty = await memory.expand({ session: join(agent.projectDir, 'empty.jsonl') })
    assert.equal(empty.error?.code, 'session_not_found')
  })

  test('a v1 file gets stable synthesized ids and a linear chain', async () => {
    const v1 =
      '{"type":"session","id":"v1-session","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/home/u/proj"}\n' +
      '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"legacy hello","timestamp":1}}\n' +
      '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"legacy reply"}],"timestamp":2}}\n'
    agent.write('v1.jsonl', v1)
    const page = await memory.expand({ session: 'v1-session', entryRange: { first: 0, last: 1 } })
    assert.deepEqual(page.entries.map((e) => [e.entryId, e.parentId, e.text]), [
      ['v1:2', null, 'legacy hello'],
      ['v1:3', 'v1:2', 'legacy reply'],
    ])
  })

  test('a 20 MB single line is read in chunks without loss', async () => {
    const big = 'x'.repeat(20 * 1024 * 1024 - 7) + 'THE-END'
    agent.write('big.jsonl', header('big') + user('a', null, big))
    const first = await memory.expand({ session: 'big', indices: [0] })
    assert.equal(first.entries[0].textRange.total, big.length)
    assert.equal(first.entries[0].text, big.slice(0, 20_000))
    assert.ok(first.next)
    const tail = await memory.expand({ ...first.next!.args, textOffset: big.length - 100 })
    assert.equal(tail.entries[0].text, big.slice(-100))
    assert.equal(tail.entries[0].textRange.complete, true)
    assert.equal(tail.next, null)
  })
})

describe('expand paging, walk and integrity', () => {
  let agent: TempAgent
  let memory: Memory
  let file: string
  const long = Array.from({ length: 50_000 }, (_, i) => (i % 101 === 0 ? '😀' : i % 103 === 0 ? '雪' : 'w')).join('')
  before(() => {
    agent = tempAgent()
    file = agent.write('walk.jsonl', header('walk') + user('a', null, 'short one') + user('b', 'a', long) + user('c', 'b', 'short two'))
    memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
  })
  after(() => agent.cleanup())

  test('following next reassembles every entry exactly', async () => {
    const pages = await allPages(memory.expand, { session: 'walk', entryRange: { first: 0, last: 2 } })
    assert.ok(pages.length >= 3)
    assert.deepEqual(reassemble(pages).map((e) => e.text), ['short one', long, 'short two'])
  })

  test('tools.call dispatches next calls', async () => {
    const first = await memory.expand({ session: 'walk', indices: [1] })
    const second = (await memory.tools.call(first.next!)) as typeof first
    assert.equal(second.entries[0].textRange.start, first.entries[0].textRange.end)
  })

  test('walk visits each entry once with complete text, awaiting async visitors', async () => {
    const seen: string[] = []
    const result = await memory.walk({ session: 'walk' }, async (entry) => {
      await new Promise((r) => setTimeout(r, 1))
      assert.equal(entry.textRange.complete, true)
      seen.push(entry.text)
    })
    assert.deepEqual(result, { visited: 3, stopped: false })
    assert.deepEqual(seen, ['short one', long, 'short two'])
  })

  test('walk stops when the visitor returns exactly false', async () => {
    let calls = 0
    const result = await memory.walk({ session: 'walk' }, () => (++calls === 2 ? false : undefined))
    assert.deepEqual(result, { visited: 2, stopped: true })
  })

  test('an append between pages keeps the continuation; a same-size rewrite is stale_pointer with no content', async () => {
    const first = await memory.expand({ session: 'walk', indices: [1] })
    appendFileSync(file, user('d', 'c', 'appended later'))
    const second = await memory.expand(first.next!.args)
    assert.equal(second.error, undefined)
    assert.equal(second.entries[0].textRange.start, first.entries[0].textRange.end)
    writeFileSync(file, readFileSync(file, 'utf8').replace('short one', 'short 1ne'))
    const stale = await memory.expand(first.next!.args)
    assert.equal(stale.error?.code, 'stale_pointer')
    assert.equal(stale.error?.sessionFile, file)
    assert.equal(stale.error?.expectedSourceHash, first.next!.args.expectedSourceHash)
    assert.notEqual(stale.error?.actualSourceHash, first.sourceHash)
    assert.deepEqual(stale.entries, [])
  })

  test('an append during a walk changes nothing; a rewrite ends it with the error', async () => {
    const seen: string[] = []
    const grown = await memory.walk({ session: 'walk' }, (entry) => {
      if (entry.index === 0) appendFileSync(file, user('e', 'd', 'appended during walk'))
      seen.push(entry.text)
    })
    assert.deepEqual(grown, { visited: 4, stopped: false })
    assert.deepEqual(seen, ['short 1ne', long, 'short two', 'appended later'])
    const result = await memory.walk({ session: 'walk' }, (entry) => {
      if (entry.index === 0) writeFileSync(file, readFileSync(file, 'utf8').replace('short 1ne', 'short one'))
    })
    assert.equal(result.error?.code, 'stale_pointer')
    assert.equal(result.visited, 1)
  })

  test('malformed arguments reject with TypeError code invalid_argument', async () => {
    await assert.rejects(memory.expand({ indices: [0, 1], before: 1 }), { name: 'TypeError', code: 'invalid_argument' })
    await assert.rejects(memory.expand({ branches: 'some' as never }), /branches must be "active" or "all"/)
    await assert.rejects(memory.sessions({ scope: 'everywhere' as never }), { code: 'invalid_argument' })
    await assert.rejects(memory.tools.call({ ref: 'memory.nope' as never, args: {} }), { code: 'unsupported_call' })
  })
})

describe('live branch', () => {
  test('the live getBranch() decides the active view on every call', async () => {
    const agent = tempAgent()
    try {
      const file = agent.write('live.jsonl', header('live') + user('a', null, 'root') + user('b', 'a', 'left') + user('c', 'a', 'right'))
      let branch = ['a', 'c']
      const live = { getSessionFile: () => file, getLeafId: () => branch[branch.length - 1], getBranch: () => branch.map((id) => ({ id })) }
      const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, live })
      const texts = async () => (await memory.expand({ entryRange: { first: 0, last: 1 } })).entries.map((e) => e.text)
      assert.deepEqual(await texts(), ['root', 'right'])
      branch = ['a', 'b'] // /tree navigation without an append
      assert.deepEqual(await texts(), ['root', 'left'])
      assert.equal(readFileSync(file, 'utf8').split('\n').length, 5, 'the session file is never written')
    } finally {
      agent.cleanup()
    }
  })
})
