// End-to-end: evidence packs in real Pi 1.6.0. Two earlier sessions, written by
// real Pi, talk about "heddlework". In a new session a codemode script calls
// memory_pack (codemode exposure by default) and follows every citation; with
// `memory.tools: "all"` (memory_pack declared) the faux model calls memory_pack
// directly. Both packs cite both sessions, and every citation is verified when
// the pack is built and its follow call expands exactly its text.
//
// Run (Node >= 22.19): "$PI_NODE22" --test __test__/e2e/pack.test.mjs
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, openSession, teardown, tempPiHome } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

const EARLIER = [
  ['where does the heddlework config live?', 'The heddlework config lives in /etc/heddlework/main.toml.'],
  ['heddlework failed to start', 'heddlework needs port 7070 free; the old daemon held it.'],
]

/** The text of the tool result answering `toolCallId` in a model call's context. */
const resultText = (ctx, toolCallId) => {
  const result = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === toolCallId)
  return { isError: result.isError, text: result.content.filter((b) => b.type === 'text').map((b) => b.text).join('') }
}

test('codemode and a direct memory_pack call both get a pack whose citations verify', { timeout: 60_000 }, async () => {
  const sdk = await import('pi-coding-agent-1x')
  const ai = await import('pi-ai-1x')
  const { createMemory } = await import(join(PACKAGE_DIR, 'dist', 'extension', 'recall', 'create-memory.mjs'))
  const { createCodemodeExtension, SessionManager, SettingsManager } = sdk
  const { fauxAssistantMessage, fauxToolCall, fauxText } = ai

  const { root, agentDir, cwd, savedEnv } = tempPiHome('pfm-pack-')
  const sessions = []
  try {
    const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
    const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
    const open = async () => {
      const factories = [{ name: 'codemode', factory: createCodemodeExtension({ models: false }) }]
      const session = await openSession(sdk, { packageDir: PACKAGE_DIR, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager: SessionManager.create(cwd), tools: ['+codemode'], factories })
      sessions.push(session)
      return session
    }

    for (const [question, answer] of EARLIER) {
      const earlier = await open()
      faux.setResponses([() => fauxAssistantMessage(fauxText(answer))])
      await earlier.prompt(question)
    }
    const earlierIds = sessions.map((s) => s.sessionId).sort()

    // Codemode: memory_pack is not declared by default, a script reaches it.
    const script = `const pack = await tools.memory_pack({ query: 'heddlework', maxTokens: 1000 })
const citations = pack.sessions.flatMap((s) => s.evidence)
const followed = []
for (const c of citations) {
  const page = await tools[c.follow.tool](c.follow.args)
  followed.push(page.entries[0].text === c.text)
}
return { typeofPack: typeof pack, tokens: pack.tokens, sessionIds: pack.sessions.map((s) => s.sessionId).sort(), verified: citations.map((c) => c.verified), followRefs: [...new Set(citations.map((c) => c.follow.ref))], followed }`
    const scripted = await open()
    let codemode
    faux.setResponses([
      () => fauxAssistantMessage(fauxToolCall('codemode', { code: script }, { id: 'cm_1' }), { stopReason: 'toolUse' }),
      (ctx) => {
        codemode = resultText(ctx, 'cm_1')
        return fauxAssistantMessage(fauxText('done'))
      },
    ])
    await scripted.prompt('What do we know about heddlework?')
    assert.equal(faux.getPendingResponseCount(), 0)
    assert.equal(codemode.isError, false, codemode.text.slice(0, 2000))
    const out = JSON.parse(codemode.text.slice(codemode.text.indexOf('{'), codemode.text.lastIndexOf('}') + 1))
    assert.equal(out.typeofPack, 'object', 'memory_pack resolves to an object in a script')
    assert.ok(out.tokens > 0 && out.tokens <= 1000, `${out.tokens} tokens`)
    assert.deepEqual(out.sessionIds, earlierIds)
    assert.ok(out.verified.length >= 2 && out.verified.every(Boolean), JSON.stringify(out.verified))
    assert.deepEqual(out.followRefs, ['memory.expand'])
    assert.ok(out.followed.every(Boolean), 'every citation expands exactly its text')

    // Direct: `memory.tools: "all"` declares memory_pack (settings are read when the extension loads).
    const settingsFile = join(agentDir, 'settings.json')
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8'))
    writeFileSync(settingsFile, JSON.stringify({ ...settings, memory: { ...settings.memory, tools: 'all' } }))
    const direct = await open()
    let called
    faux.setResponses([
      // Were memory_pack not declared, Pi would answer the call with an error result (checked below).
      () => fauxAssistantMessage(fauxToolCall('memory_pack', { query: 'heddlework' }, { id: 'mp_1' }), { stopReason: 'toolUse' }),
      (ctx) => {
        called = resultText(ctx, 'mp_1')
        return fauxAssistantMessage(fauxText('done'))
      },
    ])
    await direct.prompt('What do we know about heddlework?')
    assert.equal(faux.getPendingResponseCount(), 0)
    assert.equal(called.isError, false, called.text.slice(0, 2000))
    const pack = JSON.parse(called.text)
    assert.ok(pack.tokens <= 2000 && Math.ceil(called.text.length / 4) === pack.tokens, 'the text the model reads is what the budget counts')
    // The codemode session asked about heddlework too: it may be cited beside the earlier two.
    const cited = pack.sessions.map((s) => s.sessionId)
    assert.ok(earlierIds.every((id) => cited.includes(id)), JSON.stringify(cited))
    // Verify each citation again, outside Pi: its follow call through the host API expands exactly its text.
    const memory = createMemory({ agentDir, cwd })
    for (const citation of pack.sessions.flatMap((s) => s.evidence)) {
      assert.equal(citation.verified, true)
      assert.equal((await memory.tools.call(citation.follow)).entries[0].text, citation.text)
    }
  } finally {
    teardown(sessions, savedEnv, root)
  }
})
