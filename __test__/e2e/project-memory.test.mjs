// End-to-end: project memory in a real Pi AgentSession (SDK), driven offline by
// pi-ai's faux model, on both Pi lines (0.80.10 and 1.6.0), over repositories
// made by the real `git` (init, commit, `git worktree add`).
//
// The model calls memory_add in a session of one repository (target memory,
// no scope: the project's file by default); a new session in a `git worktree`
// of that repository has the entry in its system prompt, in the project's own
// block; sessions of another repository and of a plain folder do not.
//
// Run (Node >= 22.19): "$(bash scripts/ensure-node.sh 22)" --test __test__/e2e/project-memory.test.mjs
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, git, hasGit, teardown } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const LINES = [
  { label: '0.80.10', sdk: '@earendil-works/pi-coding-agent', ai: '@earendil-works/pi-ai' },
  { label: '1.6.0', sdk: 'pi-coding-agent-1x', ai: 'pi-ai-1x' },
]
const TOOLS = ['memory_add', 'memory_read', 'memory_replace', 'memory_remove', 'memory_apply']
const FACT = 'shop builds with pnpm, never npm'


for (const line of LINES) {
  describe(`project memory in Pi ${line.label}`, () => {
    test('an entry added in one repository reaches its worktree\'s prompt and no other project\'s', { timeout: 60_000, skip: hasGit() ? false : 'git is not on PATH' }, async () => {
      const sdk = await import(line.sdk)
      const ai = await import(line.ai)
      const { createAgentSession, DefaultResourceLoader, SessionManager, SettingsManager } = sdk
      const { fauxAssistantMessage, fauxToolCall, fauxText } = ai
      const systemPromptOf = (ctx) => (typeof ctx.systemPrompt === 'string' ? ctx.systemPrompt : ai.getCurrentSystemPrompt(ctx.messages))

      const root = realpathSync(mkdtempSync(join(tmpdir(), `pfm-project-${line.label}-`)))
      const agentDir = join(root, 'agent')
      const sessionDir = join(root, 'sessions')
      const [shop, worktree, tool, plain] = ['shop', 'shop-feature', 'tool', 'notes'].map((name) => join(root, name))
      for (const d of [agentDir, sessionDir, shop, tool, plain]) mkdirSync(d, { recursive: true })
      git(shop, 'init', '-q')
      git(shop, 'commit', '-q', '--allow-empty', '-m', 'init')
      git(shop, 'worktree', 'add', '-q', '-b', 'feature', worktree)
      git(tool, 'init', '-q')
      const savedEnv = { PI_CODING_AGENT_DIR: process.env.PI_CODING_AGENT_DIR, PI_OFFLINE: process.env.PI_OFFLINE, PI_TELEMETRY: process.env.PI_TELEMETRY }
      Object.assign(process.env, { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0' })
      const sessions = []
      try {
        const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
        const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
        const open = async (cwd) => {
          const resourceLoader = new DefaultResourceLoader({
            cwd, agentDir, settingsManager,
            noExtensions: true, noSkills: true, noPromptTemplates: true, noThemes: true, noContextFiles: true,
            additionalExtensionPaths: [PACKAGE_DIR],
          })
          await resourceLoader.reload()
          assert.deepEqual(resourceLoader.getExtensions().errors, [])
          const sessionManager = SessionManager.create(cwd, sessionDir)
          const { session } = await createAgentSession({ cwd, agentDir, model, thinkingLevel: 'off', modelRuntime, resourceLoader, settingsManager, sessionManager, tools: TOOLS })
          sessions.push(session)
          await session.bindExtensions({})
          return session
        }
        const promptSeen = async (session) => {
          let seen
          faux.setResponses([(ctx) => ((seen = systemPromptOf(ctx)), fauxAssistantMessage(fauxText('ok')))])
          await session.prompt('Hello.')
          assert.equal(faux.getPendingResponseCount(), 0)
          return seen
        }

        const first = await open(shop)
        const added = {}
        faux.setResponses([
          () => fauxAssistantMessage(fauxToolCall('memory_add', { target: 'memory', content: FACT }, { id: 'add_1' }), { stopReason: 'toolUse' }),
          (ctx) => {
            added.result = ctx.messages.at(-1)
            return fauxAssistantMessage(fauxText('Saved.'))
          },
        ])
        await first.prompt('Remember that this repository uses pnpm.')
        assert.equal(faux.getPendingResponseCount(), 0)
        const projects = readdirSync(join(agentDir, 'memories', 'projects'))
        assert.equal(projects.length, 1)
        assert.match(projects[0], /^shop-[0-9a-f]{16}$/)
        assert.equal(readFileSync(join(agentDir, 'memories', 'projects', projects[0], 'MEMORY.md'), 'utf8'), FACT)
        assert.deepEqual(readdirSync(join(agentDir, 'memories')).sort(), ['projects'], 'nothing in the global files')

        const inWorktree = await promptSeen(await open(worktree))
        assert.ok(inWorktree.includes(`PROJECT MEMORY (notes on shop) [1% — 32/2,200 chars]`), inWorktree)
        assert.ok(inWorktree.includes(FACT))
        for (const elsewhere of [tool, plain]) {
          const seen = await promptSeen(await open(elsewhere))
          assert.ok(!seen.includes(FACT) && !seen.includes('PROJECT MEMORY'), `${elsewhere}: ${seen}`)
        }
      } finally {
        teardown(sessions, savedEnv, root)
      }
    })
  })
}
