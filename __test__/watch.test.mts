// Change notification (memory.watchSessions, on by default): every write to
// a session file is seen by the very next call, and the answers are the ones
// the stat-every-file path gives.
import assert from 'node:assert/strict'
import { appendFileSync, renameSync, rmSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { createMemory } from '../extension/index.mjs'
import { tempAgent } from './helpers.mjs'

const line = (id: string, parentId: string | null, text: string) =>
  JSON.stringify({ type: 'message', id, parentId, timestamp: '2026-01-01T00:00:01.000Z', message: { role: 'user', content: text, timestamp: 1 } }) + '\n'

function session(id: string, text: string): string {
  return JSON.stringify({ type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd: '/home/u/proj' }) + '\n' + line(`${id}-0`, null, text)
}

/** Each change, then the next call's answer (paths masked), with or without the watcher. */
async function run(watchSessions: boolean): Promise<{ totals: number[]; answers: string[] }> {
  const agent = tempAgent()
  try {
    const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { watchSessions, hotSessions: 1 } })
    const answers: string[] = []
    const ask = async (query: string) => answers.push(JSON.stringify(await memory.recall({ query, scope: 'global' })).split(agent.root).join('<root>'))
    const a = agent.write('a.jsonl', session('a', 'alpha words'))
    const b = agent.write('b.jsonl', session('b', 'bravo words'))
    utimesSync(a, new Date(Date.now() - 300_000), new Date(Date.now() - 300_000))
    await ask('alpha')
    appendFileSync(a, line('a-1', 'a-0', 'appended zulu'))
    await ask('zulu')
    appendFileSync(a, line('a-2', 'a-1', 'appended yankee'))
    await ask('yankee')
    // Older than the appended a: tiers do not depend on which write landed in which clock tick.
    const c = agent.write('c.jsonl', session('c', 'charlie new'))
    utimesSync(c, new Date(Date.now() - 100_000), new Date(Date.now() - 100_000))
    await ask('charlie')
    renameSync(join(agent.projectDir, 'c.jsonl'), join(agent.projectDir, 'd.jsonl'))
    await ask('charlie')
    rmSync(b)
    await ask('bravo')
    return { totals: answers.map((text) => JSON.parse(text).total), answers }
  } finally {
    agent.cleanup()
  }
}

test('appends, new, renamed and deleted files are seen by the next call, with the answers of the stat path', async () => {
  const watched = await run(true)
  assert.deepEqual(watched.totals, [1, 1, 1, 1, 1, 0])
  assert.match(watched.answers[4], /d\.jsonl/)
  assert.doesNotMatch(watched.answers[4], /c\.jsonl/)
  assert.deepEqual(watched.answers, (await run(false)).answers)
})

test('watchSessions must be a boolean', () => {
  const agent = tempAgent()
  try {
    assert.throws(() => createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { watchSessions: 'yes' } }), /memory\.watchSessions must be a boolean/)
  } finally {
    agent.cleanup()
  }
})
