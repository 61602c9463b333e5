// End-to-end: on Pi 1.6.0 the frozen memory snapshot is a named prompt
// section (`systemPromptOptions.sections.memory`), never a forced
// `systemPrompt`. Pi then diffs sections and patches only what changed, so
// the provider keeps its cached prefix.
//
// Three runs — a prompt that writes memory, a plain prompt, and a run
// started by a custom message without a prompt — hand the provider the same
// memory section bytes, declared once; the write shows up only after a
// compaction (one patch of that section) and in a new session.
// (Pi 0.80's path, a returned systemPrompt, is covered by curated-memory.test.mjs.)
//
// Run (Node >= 22.19): "$PI_NODE22" --test __test__/e2e/prompt-section.test.mjs
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, fixedCompaction, openSession, teardown, tempPiHome } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const TOOLS = ['memory_add', 'memory_read', 'memory_replace', 'memory_remove']

/** What the provider was sent about the prompt: the system messages of its transcript. */
function promptOf(ctx) {
  const system = ctx.messages.filter((m) => m.role === 'system')
  const sections = {}
  for (const m of system) for (const [name, value] of Object.entries(m.sections ?? {})) value === null ? delete sections[name] : (sections[name] = value)
  const contentText = (content) => (typeof content === 'string' ? content : (content ?? []).map((b) => b.text ?? '').join(''))
  return {
    memory: sections.memory,
    // A forced prompt travels as opaque content; structured prompts leave it empty.
    forced: system.filter((m) => contentText(m.content).length > 0).length,
    memoryDeclarations: system.filter((m) => m.sections && 'memory' in m.sections).length,
  }
}

test('Pi 1.6.0: the memory snapshot is one prompt section, byte-identical across runs until compaction', { timeout: 60_000 }, async () => {
  const sdk = await import('pi-coding-agent-1x')
  const ai = await import('pi-ai-1x')
  const { SessionManager, SettingsManager } = sdk
  const { fauxAssistantMessage, fauxToolCall, fauxText } = ai

  const { root, agentDir, cwd, savedEnv } = tempPiHome('pfm-section-')
  const sessionDir = join(root, 'sessions')
  const memories = join(agentDir, 'memories')
  writeFileSync(join(memories, 'MEMORY.md'), 'seed fact: the build uses zig')
  const sessions = []
  try {
    const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
    const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false, keepRecentTokens: 1 }, retry: { enabled: false } })
    const open = async (sessionManager) => {
      const session = await openSession(sdk, { packageDir: PACKAGE_DIR, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager, tools: TOOLS, factories: [{ name: 'fixed-compaction', factory: fixedCompaction }] })
      sessions.push(session)
      return session
    }
    const seen = []
    const answer = (ctx) => (seen.push(promptOf(ctx)), fauxAssistantMessage(fauxText('ok')))

    const session = await open(SessionManager.create(cwd, sessionDir))
    // Run 1: the model writes memory.
    faux.setResponses([
      (ctx) => (seen.push(promptOf(ctx)), fauxAssistantMessage(fauxToolCall('memory_add', { target: 'memory', content: 'new fact: tests run on 2 cores' }, { id: 'add_1' }), { stopReason: 'toolUse' })),
      answer,
    ])
    await session.prompt('Remember that tests run on 2 cores.')
    assert.match(readFileSync(join(memories, 'MEMORY.md'), 'utf8'), /new fact: tests run on 2 cores/)
    // Run 2: a plain prompt.
    faux.setResponses([answer])
    await session.prompt('Anything else?')
    // Run 3: started by a custom message, with no prompt (before_agent_start messageType "custom").
    faux.setResponses([answer])
    await session.sendCustomMessage({ customType: 'pfm-test.tick', content: 'a scheduled check', display: false }, { triggerTurn: true })
    assert.equal(faux.getPendingResponseCount(), 0)
    assert.equal(seen.length, 4, 'four provider calls in three runs')

    const first = seen[0].memory
    assert.ok(first?.startsWith('<memory>\n') && first.endsWith('\n</memory>'), `memory section: ${first}`)
    assert.match(first, /seed fact: the build uses zig/)
    for (const [i, call] of seen.entries()) {
      assert.equal(call.memory, first, `call ${i}: identical memory section bytes`)
      assert.ok(!call.memory.includes('new fact'), `call ${i}: the write is not in the frozen section`)
      assert.equal(call.forced, 0, `call ${i}: no forced system prompt`)
      assert.equal(call.memoryDeclarations, 1, `call ${i}: the section was sent once, never patched`)
    }

    // After a compaction the section is re-captured: one patch of that section carries the write.
    await session.compact()
    faux.setResponses([answer])
    await session.prompt('After compaction?')
    const compacted = seen.at(-1)
    assert.match(compacted.memory, /seed fact: the build uses zig\n§\nnew fact: tests run on 2 cores/)
    assert.equal(compacted.forced, 0)

    // A new session captures its own snapshot, with the write.
    const fresh = await open(SessionManager.create(cwd, sessionDir))
    faux.setResponses([answer])
    await fresh.prompt('Hello again.')
    const renewed = seen.at(-1)
    assert.equal(renewed.memory, compacted.memory)
    assert.deepEqual([renewed.forced, renewed.memoryDeclarations], [0, 1])
  } finally {
    teardown(sessions, savedEnv, root)
  }
})
