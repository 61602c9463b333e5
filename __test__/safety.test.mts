// Hardening (issue 11) through the package's public API: files are decoded as
// real Pi decodes them (Pi's SessionManager is the oracle), and a session the
// process cannot read is reported, never silently left out.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { createMemory } from '../extension/index.mjs'
import { allPages, reassemble, runNode22, tempAgent, worldReadablePackage, type TempAgent } from './helpers.mjs'

const header = (id: string) => JSON.stringify({ type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/home/u/proj' })
const message = (id: string, parentId: string | null, content: unknown, role = 'user') =>
  JSON.stringify({ type: 'message', id, parentId, timestamp: '2026-01-01T00:00:01.000Z', message: { role, content, timestamp: 1 } })

/** Lines Pi accepts that strict decoders drop or empty. */
function hostileSession(): Buffer {
  const lines: Buffer[] = [
    Buffer.from(header('hostile')),
    Buffer.from(message('a', null, 'first')),
    // One Latin-1 byte inside a string: Pi reads it as U+FFFD and keeps the record.
    Buffer.concat(message('b', 'a', 'caf@ au lait', 'assistant').split('@').flatMap((part, i) => (i ? [Buffer.from([0xe9]), Buffer.from(part)] : [Buffer.from(part)]))),
    // A string cut mid-emoji, as Node writes it.
    Buffer.from(message('c', 'b', 'cut \ud83d')),
    // Duplicated keys: JSON.parse keeps the last.
    Buffer.from('{"type":"message","id":"d","parentId":"zz","parentId":"c","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"old","content":"new","timestamp":1}}'),
  ]
  return Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\n')]))
}

let agent: TempAgent
after(() => agent && rmSync(agent.root, { recursive: true, force: true }))

describe('reading sessions as Pi does', () => {
  test('invalid UTF-8, lone surrogates and duplicate keys: active entries equal Pi getBranch()', async () => {
    agent = tempAgent()
    const file = join(agent.projectDir, 'hostile.jsonl')
    writeFileSync(file, hostileSession())
    const pi: { id: string; text: string }[] = JSON.parse(runNode22('__test__/fixtures/pi-branch.mjs', [file]))
    assert.deepEqual(pi.map((e) => e.id), ['a', 'b', 'c', 'd'], 'the oracle keeps every record')
    const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
    const bound = await memory.expand({ session: file })
    const entries = reassemble(await allPages(memory.expand, { session: file, entryRange: { first: 0, last: bound.entryCount! - 1 } }))
    assert.deepEqual(entries.map((e) => ({ id: e.entryId, text: e.text })), pi)
    const page = await memory.sessions({ scope: 'global' })
    assert.deepEqual(page.coverage.reasons, ['invalid_utf8_replaced', 'lone_surrogate_replaced'])
  })
})

describe('sources the process cannot read', () => {
  test('an unreadable session is counted as source_unavailable, never left out or reported not found', async () => {
    const unreadable = tempAgent()
    // Root reads any file: the calls run as uid 65534, from a package copy it can read.
    const pkg = worldReadablePackage()
    try {
      writeFileSync(join(unreadable.projectDir, 'ok.jsonl'), [header('ok'), message('a', null, 'hello')].join('\n') + '\n')
      const secret = join(unreadable.projectDir, 'secret.jsonl')
      writeFileSync(secret, [header('secret'), message('a', null, 'hidden')].join('\n') + '\n')
      chmodSync(secret, 0o000)
      for (const dir of [unreadable.root, unreadable.agentDir, join(unreadable.agentDir, 'sessions'), unreadable.projectDir]) chmodSync(dir, 0o777)
      mkdirSync(join(unreadable.agentDir, 'fabric'), { mode: 0o777, recursive: true })
      chmodSync(join(unreadable.agentDir, 'fabric'), 0o777)
      const script = `
        const { createMemory } = await import(${JSON.stringify(join(pkg, 'dist/extension/index.mjs'))});
        const memory = createMemory({ agentDir: ${JSON.stringify(unreadable.agentDir)}, cwd: '/home/u/proj' });
        const scope = 'session:' + ${JSON.stringify(secret)};
        process.stdout.write(JSON.stringify({
          global: (await memory.sessions({ scope: 'global' })).coverage,
          recall: await memory.recall({ query: 'hidden', scope }),
          expand: await memory.expand({ session: ${JSON.stringify(secret)} }),
          sessions: await memory.sessions({ scope }),
        }));`
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: pkg, ...asNobody })
      assert.equal(run.status, 0, run.stderr)
      const { global, recall, expand, sessions } = JSON.parse(run.stdout)
      assert.deepEqual(
        [global.complete, global.eligibleSessions, global.indexedSessions, global.staleSessions, global.unavailableSessions, global.reasons],
        [false, 2, 1, 1, 1, ['source_unavailable']],
      )
      for (const page of [recall, expand, sessions]) {
        assert.deepEqual([page.error.code, page.error.reason, page.error.sessionFile], ['source_unavailable', 'permission_denied', secret], JSON.stringify(page))
      }
      for (const page of [recall, sessions]) assert.deepEqual([page.coverage.unavailableSessions, page.coverage.reasons], [1, ['source_unavailable']])
    } finally {
      rmSync(unreadable.root, { recursive: true, force: true })
      rmSync(pkg, { recursive: true, force: true })
    }
  })
})

describe('the 30,000-character envelope', () => {
  test('errors that echo a long id stay within it', async () => {
    const small = tempAgent()
    try {
      const memory = createMemory({ agentDir: small.agentDir, cwd: small.cwd })
      const id = 'x'.repeat(40_000)
      for (const result of [await memory.expand({ session: id }), await memory.recall({ query: 'q', scope: `session:${id}` }), await memory.sessions({ scope: `session:${id}` })]) {
        assert.ok(JSON.stringify(result).length <= 30_000, `${JSON.stringify(result).length} chars`)
        assert.equal((result as any).error.code, 'session_not_found')
      }
    } finally {
      small.cleanup()
    }
  })
})

describe('random session trees against Pi', () => {
  test('active entries equal Pi getBranch() for random branching, duplicate ids and orphans', async () => {
    const trees = tempAgent()
    try {
      let seed = 7
      const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
      const files: string[] = []
      for (let f = 0; f < 40; f++) {
        const ids: string[] = []
        const lines = [header(`t${f}`)]
        for (let i = 0, n = 1 + random(25); i < n; i++) {
          // Mostly chains, with branches back to older entries, repeated ids and dangling parents.
          const roll = random(10)
          const id = roll === 0 && ids.length ? ids[random(ids.length)] : `e${i}`
          // A repeated id is a root: a parent walk through it can never loop.
          const parent = !ids.length || id !== `e${i}` ? null : roll === 1 ? `missing${i}` : roll < 4 ? ids[random(ids.length)] : ids[ids.length - 1]
          lines.push(message(id, parent, `text ${f}.${i}`, random(2) ? 'user' : 'assistant'))
          ids.push(id)
        }
        files.push(trees.write(`t${f}.jsonl`, lines.join('\n') + '\n'))
      }
      const pi: { id: string; text: string }[][] = JSON.parse(runNode22('__test__/fixtures/pi-branch.mjs', files))
      const memory = createMemory({ agentDir: trees.agentDir, cwd: trees.cwd })
      for (const [i, file] of files.entries()) {
        const bound = await memory.expand({ session: file })
        const entries = bound.entryCount ? reassemble(await allPages(memory.expand, { session: file, entryRange: { first: 0, last: bound.entryCount - 1 } })) : []
        assert.deepEqual(entries.map((e) => ({ id: e.entryId, text: e.text })), pi[i], file)
      }
    } finally {
      trees.cleanup()
    }
  })
})
