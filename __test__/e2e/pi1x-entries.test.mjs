// End-to-end on Pi 1.6.0 (the entries exist from Pi 0.87; 0.80 writes none):
// the system messages Pi persists (prompt sections, tool declarations), usage
// entries, compaction.systemMessage and context edits, written by real Pi.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { openPiSession, PI_LINES } from './pi-session.mjs'

const line = PI_LINES.find((l) => l.label === '1.6.0')

test('Pi 1.6.0 context edits, usage, system messages and compaction', { timeout: 90_000 }, async () => {
  // Manual compaction with a tiny kept window, so a short session has something to summarize.
  const pi = await openPiSession(line, { compaction: { keepRecentTokens: 1 } })
  try {
    await pi.turn('the egret codeword is settled')
    await pi.turn('herons come second')
    const entries = () => pi.sessionManager.getEntries()
    const byText = (text) => entries().find((e) => e.type === 'message' && JSON.stringify(e.message.content).includes(text))
    const egret = byText('egret codeword')
    const heron = byText('herons come')
    const beforeEdits = entries().at(-1)
    pi.sessionManager.appendUsage('cache_warm', 'faux', 'faux-1', { input: 0, output: 0, cacheRead: 7, cacheWrite: 0, totalTokens: 7, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } })
    const omitted = pi.sessionManager.appendContextEdit(egret.id, null)
    const replaced = pi.sessionManager.appendContextEdit(heron.id, { content: 'pelicans replace the herons' })
    // Pi may summarize the history and a split turn's prefix: one faux answer each.
    const summary = () => pi.ai.fauxAssistantMessage(pi.ai.fauxText('summary of the talk'))
    pi.faux.setResponses([summary, summary])
    await pi.session.compact()

    const lines = readFileSync(pi.session.sessionFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
    const system = lines.find((l) => l.message?.role === 'system')
    assert.ok(system?.message.sections && system.message.toolsAdded?.some((t) => t.name === 'memory_expand'), 'Pi persisted the prompt and tool declarations')
    assert.ok(lines.some((l) => l.type === 'usage'), 'a usage entry')
    assert.ok(lines.find((l) => l.type === 'compaction')?.systemMessage, 'compaction.systemMessage')
    assert.equal(lines.filter((l) => l.type === 'context_edit').length, 2)

    const [egretHits, pelicanHits, declared, expanded] = await pi.turn('what did we settle?', [
      () => ['memory_recall', { query: 'egret', scope: 'session' }],
      () => ['memory_recall', { query: 'pelicans', scope: 'session' }],
      // Words only the system prompt and tool declarations hold.
      () => ['memory_recall', { query: 'stale_pointer textRange', scope: 'session' }],
      () => ['memory_expand', { entryIds: [egret.id] }],
    ])
    assert.equal(egretHits.total, 1, JSON.stringify(egretHits))
    assert.deepEqual([egretHits.hits[0].contextEdit, egretHits.hits[0].contextEditId], ['omitted', omitted])
    assert.equal(pelicanHits.total, 1, JSON.stringify(pelicanHits))
    assert.deepEqual([pelicanHits.hits[0].role, pelicanHits.hits[0].targetId, pelicanHits.hits[0].contextEdit], ['contextEdit', heron.id, 'replaced'])
    assert.equal(declared.total, 0, `system messages are not evidence: ${JSON.stringify(declared.hits)}`)
    assert.equal(declared.coverage.complete, true)
    assert.equal(expanded.entries[0].text, 'the egret codeword is settled', 'history stays history')
    assert.deepEqual([expanded.entries[0].contextEdit, expanded.entries[0].contextEditId], ['omitted', omitted])
    const [heronExpanded] = await pi.turn('and the herons?', [() => ['memory_expand', { entryIds: [heron.id] }]])
    assert.deepEqual([heronExpanded.entries[0].contextEdit, heronExpanded.entries[0].contextEditId], ['replaced', replaced])

    // Branch-relative: back before the edits, the egret prompt is plain history again.
    await pi.session.navigateTree(beforeEdits.id, { summarize: false })
    const [plain, all] = await pi.turn('again?', [
      () => ['memory_expand', { entryIds: [egret.id] }],
      () => ['memory_recall', { query: 'pelicans', scope: 'session', branches: 'all' }],
    ])
    assert.equal(plain.error, undefined, JSON.stringify(plain.error))
    assert.equal(plain.entries[0].contextEdit, undefined, JSON.stringify(plain.entries[0]))
    // (The other hit is the earlier memory_recall call that asked for "pelicans".)
    assert.ok(all.hits.some((h) => h.role === 'contextEdit' && h.targetId === heron.id), `the replacement under branches all: ${JSON.stringify(all.hits)}`)
  } finally {
    pi.close()
  }
})
