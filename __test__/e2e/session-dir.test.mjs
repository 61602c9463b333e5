// End-to-end: Pi's custom session dir, on both Pi lines (0.80.10 and 1.6.0).
//
// Real Pi writes sessions of two projects flat into one custom dir (what
// `--session-dir`, PI_CODING_AGENT_SESSION_DIR or the `sessionDir` setting
// do). In a later session of project A the model's memory_sessions and
// memory_recall see A's sessions there (by header cwd) under `project`, both
// projects under `global`; the live SessionManager's getSessionDir() is what
// tells the extension. The CLI finds the same sessions through
// `--session-dir`, the environment variable and the settings; dreaming's
// session gathering reads them too.
//
// Run (Node >= 22.19): "$PI_NODE22" --test __test__/e2e/session-dir.test.mjs
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, openSession, teardown, tempPiHome } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CLI = join(PACKAGE_DIR, 'dist', 'extension', 'cli.mjs')
const LINES = [
  { label: '0.80.10', sdk: '@earendil-works/pi-coding-agent', ai: '@earendil-works/pi-ai' },
  { label: '1.6.0', sdk: 'pi-coding-agent-1x', ai: 'pi-ai-1x' },
]
const TOOLS = ['memory_recall', 'memory_expand', 'memory_sessions']

for (const line of LINES) {
  describe(`custom session dir in Pi ${line.label}`, () => {
    test('discovery, index, project/global scopes, the CLI and dreaming cover the flat dir', { timeout: 60_000 }, async () => {
      const sdk = await import(line.sdk)
      const ai = await import(line.ai)
      const { SessionManager, SettingsManager } = sdk
      const { fauxAssistantMessage, fauxToolCall, fauxText } = ai

      const { root, agentDir, cwd: projectA, savedEnv } = tempPiHome(`pfm-sessiondir-${line.label}-`, ['PI_CODING_AGENT_SESSION_DIR'])
      delete process.env.PI_CODING_AGENT_SESSION_DIR
      const projectB = join(root, 'project-b')
      const custom = join(root, 'my-sessions')
      for (const d of [projectB, custom]) mkdirSync(d, { recursive: true })
      const sessions = []
      try {
        const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
        const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
        const open = async (cwd) => {
          const sessionManager = SessionManager.create(cwd, custom)
          const session = await openSession(sdk, { packageDir: PACKAGE_DIR, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager, tools: TOOLS })
          sessions.push(session)
          return session
        }
        const chat = async (cwd, text) => {
          const session = await open(cwd)
          faux.setResponses([() => fauxAssistantMessage(fauxText(`noted: ${text}`))])
          await session.prompt(text)
          return session
        }
        // Earlier sessions of both projects, written flat into the custom dir by Pi.
        const earlierA = await chat(projectA, 'the wagtail migration of project A')
        const earlierB = await chat(projectB, 'the wagtail cleanup of project B')
        assert.equal(dirname(earlierA.sessionFile), custom)
        assert.equal(dirname(earlierB.sessionFile), custom)
        assert.equal(existsSync(join(agentDir, 'sessions')), false, 'nothing in the default layout')

        // A new session of project A: the model lists and recalls.
        const session = await open(projectA)
        const results = {}
        const call = (name, args, id) => () => fauxAssistantMessage(fauxToolCall(name, args, { id }), { stopReason: 'toolUse' })
        const keep = (id) => (ctx) => {
          const message = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === id)
          // The whole page (the result's details); the model's text is the lean view.
          results[id] = message.details ?? JSON.parse(message.content.map((b) => b.text ?? '').join(''))
        }
        faux.setResponses([
          call('memory_sessions', {}, 'project'),
          (ctx) => (keep('project')(ctx), call('memory_sessions', { scope: 'global' }, 'global')()),
          (ctx) => (keep('global')(ctx), call('memory_recall', { query: 'wagtail' }, 'recall')()),
          (ctx) => (keep('recall')(ctx), fauxAssistantMessage(fauxText('done'))),
        ])
        await session.prompt('What did we do before?')
        assert.equal(faux.getPendingResponseCount(), 0)

        const ids = (page) => page.sessions.map((s) => s.id).sort()
        assert.equal(results.project.coverage.complete, true)
        assert.deepEqual(ids(results.project), [earlierA.sessionId, session.sessionId].sort(), 'project = this cwd, by header, in the flat dir')
        assert.deepEqual(ids(results.global), [earlierA.sessionId, earlierB.sessionId, session.sessionId].sort())
        assert.ok(results.project.sessions.every((s) => dirname(s.file) === custom))
        const hitSessions = new Set(results.recall.hits.filter((h) => h.kind === 'entry' && h.role === 'user').map((h) => h.sessionId))
        assert.ok(hitSessions.has(earlierA.sessionId), JSON.stringify(results.recall).slice(0, 1500))
        assert.ok(!hitSessions.has(earlierB.sessionId), 'project B is not recalled under scope project')

        // The CLI: --session-dir, the environment variable, the agent dir's settings; none = the default layout only.
        const cliIds = (args, env = {}) => {
          const out = spawnSync(process.execPath, [CLI, 'sessions', '--json', '--agent-dir', agentDir, '--cwd', projectA, ...args], {
            env: { ...process.env, PI_CODING_AGENT_SESSION_DIR: '', ...env },
            encoding: 'utf8',
          })
          // Exit 3: no Pi sessions found where the CLI looked.
          return out.status === 3 ? 'no sessions' : ids(JSON.parse(out.stdout))
        }
        const expected = [earlierA.sessionId, session.sessionId].sort()
        assert.equal(cliIds([]), 'no sessions', 'without a session dir only the (empty) default layout is read')
        assert.deepEqual(cliIds(['--session-dir', custom]), expected)
        assert.deepEqual(cliIds([], { PI_CODING_AGENT_SESSION_DIR: custom }), expected)
        writeFileSync(join(agentDir, 'settings.json'), JSON.stringify({ sessionDir: custom }))
        assert.deepEqual(cliIds([]), expected)
        // A project's own sessionDir is read only for a trusted project, as Pi reads project settings.
        writeFileSync(join(agentDir, 'settings.json'), '{}')
        mkdirSync(join(projectA, '.pi'), { recursive: true })
        writeFileSync(join(projectA, '.pi', 'settings.json'), JSON.stringify({ sessionDir: custom }))
        assert.equal(cliIds([]), 'no sessions')
        assert.deepEqual(cliIds(['--trust-project']), expected)

        // Dreaming's gathering over the default store (global scope) reads the flat dir.
        const { createMemory } = await import(join(PACKAGE_DIR, 'dist', 'extension', 'recall', 'create-memory.mjs'))
        const { gatherTurns } = await import(join(PACKAGE_DIR, 'dist', 'extension', 'dreaming', 'index.mjs'))
        const turns = await gatherTurns(createMemory({ agentDir, cwd: projectA, sessionDir: custom }), { includeGlobal: true })
        assert.deepEqual(turns.map((t) => t.user).filter((u) => u.includes('wagtail')).sort(), ['the wagtail cleanup of project B', 'the wagtail migration of project A'])
      } finally {
        teardown(sessions, savedEnv, root)
      }
    })
  })
}
