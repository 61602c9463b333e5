// End-to-end: follow and next calls of the live session survive Pi's appends
// between turns, and still fail (no content) on a rewrite or a branch change,
// in real Pi 0.80.10 and 1.6.0 driven by the faux model. The model calls what
// it read: the lean view's pinned calls, not the page's full arguments.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { openPiSession, PI_LINES } from './pi-session.mjs'

const TIMEOUT_MS = 90_000
const WORD = 'bluefinch'

const entryHits = (page) => page.hits.filter((hit) => hit.kind === 'entry')
const hitFor = (page, text) => entryHits(page).find((hit) => hit.snippet.includes(text))
/** What the model calls to read a hit or a page: the lean view's `{tool: args}` (pinned), as the model read it. */
const modelCall = (call) => Object.entries(call)[0]
const followOf = (page, hit) => modelCall(page.view.hits[page.hits.indexOf(hit)])
const nextOf = (page) => modelCall(page.view.next)

for (const line of PI_LINES) {
  describe(`follow bindings in Pi ${line.label}`, () => {
    test('recall in one turn, follow and page in later turns; rewrite and /tree make pointers stale', { timeout: TIMEOUT_MS }, async () => {
      const pi = await openPiSession(line)
      try {
        for (const tag of ['alpha', 'beta', 'gamma']) await pi.turn(`note ${WORD} ${tag}`)

        // Turn 4: recall the live session, one hit per page, and once over all branches.
        const [first, all] = await pi.turn('what did I note?', [
          () => ['memory_recall', { query: WORD, scope: 'session', pageSize: 1 }],
          () => ['memory_recall', { query: WORD, scope: 'session', branches: 'all' }],
        ])
        assert.equal(first.error, undefined, JSON.stringify(first.error))
        assert.equal(first.total, 3, JSON.stringify(first))
        assert.ok(first.next, 'a next page')

        // Turn 5: Pi appended turn 4 in between; the follow still reads the entry, and page 2 continues the same stream.
        const [followed, second] = await pi.turn('show the first one', [
          () => followOf(first, first.hits[0]),
          () => nextOf(first),
        ])
        assert.equal(followed.error, undefined, JSON.stringify(followed.error))
        assert.equal(followed.entries[0].index, first.hits[0].index)
        assert.ok(followed.entries[0].text.includes(WORD), followed.entries[0].text)
        assert.equal(second.error, undefined, JSON.stringify(second.error))
        // Turn 6: page 3, after another append.
        const [third] = await pi.turn('and the rest', [() => nextOf(second)])
        assert.equal(third.error, undefined, JSON.stringify(third.error))
        assert.equal(third.next, null)
        const paged = [first, second, third].flatMap((page) => entryHits(page).map((hit) => hit.index))
        assert.equal(new Set(paged).size, 3, `no hit lost or repeated while the session grew: ${paged}`)
        assert.deepEqual([...paged].sort(), entryHits(all).map((hit) => hit.index).sort())

        // A same-size rewrite of an earlier line: the pointer to a later entry is stale, with no content.
        const file = pi.session.sessionFile
        const original = readFileSync(file, 'utf8')
        assert.ok(original.includes(`note ${WORD} alpha`))
        writeFileSync(file, original.replace(`note ${WORD} alpha`, `note ${WORD} alphA`))
        const gamma = hitFor(all, 'gamma')
        const [rewritten] = await pi.turn('show gamma', [() => followOf(all, gamma)])
        assert.equal(rewritten.error?.code, 'stale_pointer', JSON.stringify(rewritten))
        assert.deepEqual(rewritten.entries, [])

        // Fresh pointers, then /tree back to the reply of the first note: beta and gamma leave the active branch.
        const [active, every] = await pi.turn('recall again', [
          () => ['memory_recall', { query: WORD, scope: 'session' }],
          () => ['memory_recall', { query: WORD, scope: 'session', branches: 'all' }],
        ])
        const entries = pi.sessionManager.getEntries()
        const alphaPrompt = entries.findIndex((e) => e.type === 'message' && JSON.stringify(e.message.content).includes(`${WORD} alpha`))
        const reply = entries.slice(alphaPrompt + 1).find((e) => e.type === 'message' && e.message.role === 'assistant')
        assert.ok(alphaPrompt >= 0 && reply, 'the reply to the first note')
        const navigation = await pi.session.navigateTree(reply.id, { summarize: false })
        assert.equal(navigation.cancelled, false)
        const [offBranch, readable, onBranch] = await pi.turn('show gamma once more', [
          () => followOf(active, hitFor(active, 'gamma')),
          () => followOf(every, hitFor(every, 'gamma')),
          () => followOf(active, hitFor(active, 'alphA')),
        ])
        assert.ok(['stale_pointer', 'address_not_found'].includes(offBranch.error?.code), JSON.stringify(offBranch))
        assert.deepEqual(offBranch.entries, [])
        assert.equal(readable.error, undefined, JSON.stringify(readable.error))
        assert.ok(readable.entries[0].text.includes('gamma'))
        assert.equal(onBranch.error, undefined, `alpha stays on the branch: ${JSON.stringify(onBranch.error)}`)
        assert.ok(onBranch.entries[0].text.includes('alphA'))
      } finally {
        pi.close()
      }
    })
  })
}
