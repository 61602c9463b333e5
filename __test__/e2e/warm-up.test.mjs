// End-to-end: no silent waits in a real Pi AgentSession (both Pi lines). Pi's
// session_start starts the background warm-up, which indexes the history
// before any tool call; session_shutdown stops it; a recall that indexes
// streams its progress through Pi's tool update callback
// (tool_execution_update events, what the TUI draws while the call runs).
//
// Run (Node >= 22.19): "$(bash scripts/ensure-node.sh 22)" --test __test__/e2e/warm-up.test.mjs
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, test } from 'node:test'
import { encodeCwd, openPiSession, PI_LINES } from './pi-session.mjs'

const TEST_TIMEOUT_MS = 60_000

function sessionFile(id, cwd, words) {
  const header = { type: 'session', version: 3, id, timestamp: '2026-01-01T00:00:00.000Z', cwd }
  const lines = words.map((text, i) =>
    JSON.stringify({ type: 'message', id: `${id}-${i}`, parentId: i ? `${id}-${i - 1}` : null, timestamp: '2026-01-01T00:00:01.000Z', message: { role: i % 2 ? 'assistant' : 'user', content: text, timestamp: i } }),
  )
  return [JSON.stringify(header), ...lines].join('\n') + '\n'
}

/** `count` sessions of this project and `elsewhere` of another, and the settings (dreaming off: it would index too). */
const seeded = (count, elsewhere, memory = {}) => ({ agentDir, cwd, sessionDir }) => {
  const words = (i) => Array.from({ length: 40 }, (_, j) => `turn ${j} of ${i}: the checkout service timed out after retry ${j}`)
  for (let i = 0; i < count; i++) writeFileSync(join(sessionDir, `p${i}.jsonl`), sessionFile(`p${i}`, cwd, words(i)))
  const other = join(agentDir, 'sessions', encodeCwd('/home/u/other'))
  mkdirSync(other, { recursive: true })
  for (let i = 0; i < elsewhere; i++) writeFileSync(join(other, `o${i}.jsonl`), sessionFile(`o${i}`, '/home/u/other', words(i)))
  writeFileSync(join(agentDir, 'settings.json'), JSON.stringify({ memory, 'pi-memory': { dreaming: { enabled: false } } }))
}

const records = (agentDir) => {
  const dir = join(agentDir, 'fabric', 'memory-index')
  return existsSync(dir) ? readdirSync(dir).filter((name) => /\.(hot|cold)$/.test(name)).length : 0
}

async function until(condition, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
    await sleep(25)
  }
}

/** The partial results Pi delivered for memory_recall during `run`. */
async function recallUpdates(host, run) {
  const updates = []
  const unsubscribe = host.session.subscribe((event) => {
    if (event.type === 'tool_execution_update' && event.toolName === 'memory_recall') updates.push(event.partialResult)
  })
  try {
    return { results: await run(), updates }
  } finally {
    unsubscribe()
  }
}

for (const line of PI_LINES) {
  describe(`Pi ${line.label}: no silent waits`, { timeout: TEST_TIMEOUT_MS }, () => {
    test('session_start indexes the history in the background; the first recall then waits on nothing', async () => {
      const host = await openPiSession(line, { seed: seeded(30, 10) })
      try {
        assert.equal(records(host.agentDir), 0, 'nothing indexed while Pi starts')
        await until(() => records(host.agentDir) === 40, 'the warm-up to index all 40 sessions')
        await sleep(300)
        const { results, updates } = await recallUpdates(host, () => host.turn('recall', [() => ['memory_recall', { query: 'checkout' }]]))
        assert.equal(results[0].coverage.eligibleSessions, 31, 'the 30 and the live one')
        // Only the live session (written at the first assistant message) is left to index.
        assert.ok(updates.every((u) => u.details.indexing.sessionsToIndex <= 1), JSON.stringify(updates.map((u) => u.content[0].text)))
      } finally {
        host.close()
      }
    })

    test('session_shutdown stops the warm-up: no call after it', async () => {
      const host = await openPiSession(line, { seed: seeded(30, 0, { maxSyncSessions: 1 }) })
      try {
        await until(() => records(host.agentDir) > 0, 'the first warm-up call')
        await host.session.extensionRunner.emit({ type: 'session_shutdown', reason: 'quit' })
        await sleep(500)
        const left = records(host.agentDir)
        assert.ok(left < 30, `stopped early (${left} of 30)`)
        await sleep(700)
        assert.equal(records(host.agentDir), left)
      } finally {
        host.close()
      }
    })

    test('a recall that indexes streams "indexing: N/M sessions · X/Y MB" to the tool view', async () => {
      const host = await openPiSession(line, { seed: seeded(30, 0, { warmUp: false }) })
      try {
        const { results, updates } = await recallUpdates(host, () => host.turn('recall', [() => ['memory_recall', { query: 'checkout' }]]))
        assert.equal(results[0].coverage.indexedSessions, 31, 'the 30 and the live one')
        assert.ok(updates.length >= 1, 'Pi delivered the progress')
        assert.match(updates[0].content[0].text, /^indexing: 0\/3\d sessions · 0 B\/\d+(\.\d)? (kB|MB)$/)
        assert.ok(updates[0].details.indexing.sessionsToIndex >= 30)
      } finally {
        host.close()
      }
    })
  })
}
