// A real Pi AgentSession with this package loaded by path, driven by the faux
// model, for tests that talk to the memory tools over several turns.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fauxModel, teardown } from './faux.mjs'

export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

export const PI_LINES = [
  { label: '0.80.10', sdk: '@earendil-works/pi-coding-agent', ai: '@earendil-works/pi-ai' },
  { label: '1.6.0', sdk: 'pi-coding-agent-1x', ai: 'pi-ai-1x' },
]

import { encodeCwd } from '../../dist/extension/shared/pi-paths.mjs'

export { encodeCwd }

export const textOf = (message) =>
  (Array.isArray(message?.content) ? message.content : [])
    .filter((block) => block?.type === 'text')
    .map((block) => block.text)
    .join('')

/**
 * Opens a session in a fresh agent dir. `turn(prompt, steps)` runs one prompt
 * whose assistant makes one tool call per step (`step(results)` returns
 * `[toolName, args]`, seeing the parsed results of the earlier steps) and
 * then answers with text; it resolves to those results: each page as the
 * tool's details, with the model's lean text parsed as `view`. `seed({agentDir,
 * cwd, sessionDir})` runs before Pi loads the extension.
 */
export async function openPiSession(line, { tools, memory, compaction, seed } = {}) {
  const sdk = await import(line.sdk)
  const ai = await import(line.ai)
  const root = realpathSync(mkdtempSync(join(tmpdir(), `pfm-e2e-${line.label}-`)))
  const agentDir = join(root, 'agent')
  const cwd = join(root, 'project')
  const sessionDir = join(agentDir, 'sessions', encodeCwd(cwd))
  for (const dir of [agentDir, cwd, sessionDir]) mkdirSync(dir, { recursive: true })
  // The extension reads its `memory` key from Pi's global settings file. No index warm-up unless asked
  // (warm-up.test.mjs covers it): one still indexing at teardown races the removal.
  writeFileSync(join(agentDir, 'settings.json'), JSON.stringify({ memory: { warmUp: false, ...memory } }))
  // Sessions and settings the extension must find when Pi loads it and starts the session.
  seed?.({ agentDir, cwd, sessionDir })
  const savedEnv = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, PI_OFFLINE: process.env.PI_OFFLINE, PI_TELEMETRY: process.env.PI_TELEMETRY }
  Object.assign(process.env, { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0' })
  const sessions = []
  try {
    const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
    const settingsManager = sdk.SettingsManager.inMemory({ compaction: { enabled: false, ...compaction }, retry: { enabled: false } })
    const resourceLoader = new sdk.DefaultResourceLoader({
      cwd, agentDir, settingsManager, noExtensions: true, noSkills: true, noPromptTemplates: true, noThemes: true,
      noContextFiles: true, additionalExtensionPaths: [PACKAGE_DIR],
    })
    await resourceLoader.reload()
    assert.deepEqual(resourceLoader.getExtensions().errors, [])
    const sessionManager = sdk.SessionManager.create(cwd, sessionDir)
    const { session } = await sdk.createAgentSession({
      cwd, agentDir, model, thinkingLevel: 'off', modelRuntime, resourceLoader, settingsManager, sessionManager,
      tools: tools ?? ['memory_expand', 'memory_recall', 'memory_sessions'],
    })
    sessions.push(session)
    await session.bindExtensions({})
    let calls = 0
    const turn = async (prompt, steps = []) => {
      const results = []
      const respond = (index) => (ctx) => {
        if (index > 0) {
          const id = `call_${calls}_${index - 1}`
          const message = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === id)
          assert.ok(message, `tool result ${id} reached the model`)
          // The page (the result's details) for assertions; `view` is what the model read (recall/model-view.mts).
          const view = JSON.parse(textOf(message))
          results.push(Object.defineProperty(message.details ?? view, 'view', { value: view }))
        }
        if (index === steps.length) return ai.fauxAssistantMessage(ai.fauxText(`done ${calls}`))
        const [name, args] = steps[index](results)
        return ai.fauxAssistantMessage(ai.fauxToolCall(name, args, { id: `call_${calls}_${index}` }), { stopReason: 'toolUse' })
      }
      faux.setResponses(steps.map((_, i) => respond(i)).concat(respond(steps.length)))
      await session.prompt(prompt)
      assert.equal(faux.getPendingResponseCount(), 0, `every faux response of "${prompt}" was used`)
      calls += 1
      return results
    }
    return { sdk, ai, faux, session, sessionManager, agentDir, cwd, sessionDir, turn, close: () => teardown(sessions, savedEnv, root) }
  } catch (error) {
    teardown(sessions, savedEnv, root)
    throw error
  }
}
