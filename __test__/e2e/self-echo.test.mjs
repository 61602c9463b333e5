// End-to-end: recall does not find itself. In real Pi 0.80.10 and 1.6.0 the
// results of the memory tools are appended to the session as tool results
// quoting other entries; they are not recall evidence by default (nor is the
// turn in progress), yet stay findable by ref and readable by expansion.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { openPiSession, PI_LINES } from './pi-session.mjs'

const TIMEOUT_MS = 90_000
// Long enough that a recall result quoting it is over maxEntryChars (2000).
const NOTE = `the bluefinch nests in the old oak ${'by the river '.repeat(135)}`

async function recallTwice(pi) {
  await pi.turn(NOTE)
  const [inProgress, followed] = await pi.turn('recall bluefinch', [
    () => ['memory_recall', { query: 'bluefinch', scope: 'session', snippetChars: 2000 }],
    ([recalled]) => ['memory_expand', recalled.hits[0].follow.args],
  ])
  const [later, calls] = await pi.turn('and once more', [
    () => ['memory_recall', { query: 'bluefinch', scope: 'session', pageSize: 50 }],
    () => ['memory_recall', { ref: 'memory.recall', scope: 'session', pageSize: 50 }],
  ])
  return { inProgress, followed, later, calls }
}

for (const line of PI_LINES) {
  describe(`self-echo in Pi ${line.label}`, () => {
    test('own tool results and the asking prompt are not evidence; a setting turns it off', { timeout: TIMEOUT_MS }, async () => {
      const pi = await openPiSession(line)
      try {
        const { inProgress, followed, later, calls } = await recallTwice(pi)
        // The prompt that asked is not a hit: only the note is.
        assert.equal(inProgress.total, 1, JSON.stringify(inProgress.hits.map((h) => h.snippet.slice(0, 60))))
        assert.ok(inProgress.hits[0].snippet.startsWith('the bluefinch nests'))
        assert.ok(followed.entries[0].text.startsWith('the bluefinch nests'), 'expand reads the entry')
        // A turn later: the prompt that only asked to recall, its calls and their quoting results are no
        // evidence; the note alone is.
        const roles = later.hits.map((h) => `${h.role}:${h.ref}`)
        assert.deepEqual(roles, ['user:null'], `no echoes: ${roles}`)
        assert.ok(later.hits[0].snippet.startsWith('the bluefinch nests'))
        assert.equal(later.coverage.complete, true, `a long own result is not truncated evidence: ${JSON.stringify(later.coverage)}`)
        // Structurally findable, fully expandable.
        const results = calls.hits.filter((h) => h.role === 'toolResult')
        assert.deepEqual(calls.hits.map((h) => `${h.role}:${h.tool}:${h.provider}`), ['assistant:memory_recall:memory', 'toolResult:memory_recall:memory'])
        const [echo] = await pi.turn('show that result', [() => ['memory_expand', results.find((h) => h.tool === 'memory_recall').follow.args]])
        assert.ok(echo.entries[0].text.includes('the bluefinch nests'), echo.entries[0].text.slice(0, 200))
      } finally {
        pi.close()
      }
      const indexed = await openPiSession(line, { memory: { indexOwnToolResults: true, recallCurrentTurn: true } })
      try {
        const { inProgress, later } = await recallTwice(indexed)
        assert.ok(inProgress.total >= 2, 'the asking prompt is a hit with recallCurrentTurn')
        assert.ok(later.hits.some((h) => h.role === 'toolResult' && h.tool === 'memory_recall'), 'echoes with indexOwnToolResults')
        assert.ok(later.hits.some((h) => h.role === 'user' && h.snippet === 'recall bluefinch'), 'the asking prompt with indexOwnToolResults')
      } finally {
        indexed.close()
      }
    })

    test('after four turns that asked to recall a word, the fact is the first hit', { timeout: TIMEOUT_MS }, async () => {
      const pi = await openPiSession(line)
      try {
        await pi.turn('the bluefinch is the codename of the spring release')
        const pages = []
        for (let turn = 0; turn < 4; turn++) {
          const [page] = await pi.turn('recall bluefinch', [() => ['memory_recall', { query: 'bluefinch' }]])
          pages.push(page)
        }
        for (const page of pages) {
          assert.equal(page.total, 1, JSON.stringify(page.hits.map((h) => `${h.role}:${h.ref}:${h.snippet.slice(0, 40)}`)))
          assert.ok(page.hits[0].snippet.startsWith('the bluefinch is the codename'), page.hits[0].snippet)
        }
      } finally {
        pi.close()
      }
    })
  })
}
