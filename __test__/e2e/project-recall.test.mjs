// End-to-end: the project recall scope across checkouts, in real Pi 1.6.0 over
// repositories made by the real `git` (init, commit, `git worktree add`). A
// session in the main checkout (written by real Pi) mentions "ossifrage"; so do
// sessions of another repository and of a plain folder. From a Pi session in the
// worktree, the faux model's memory_recall (scope project, the default) finds the
// main checkout's session and neither of the others.
//
// Run (Node >= 22.19): "$(bash scripts/ensure-node.sh 22)" --test __test__/e2e/project-recall.test.mjs
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, git, hasGit, openSession, teardown, tempPiHome } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')


test('from a git worktree, project recall finds the main checkout\'s sessions and no other project\'s', { timeout: 90_000, skip: hasGit() ? false : 'git is not on PATH' }, async () => {
  const sdk = await import('pi-coding-agent-1x')
  const ai = await import('pi-ai-1x')
  const { SessionManager, SettingsManager } = sdk
  const { fauxAssistantMessage, fauxToolCall, fauxText } = ai
  const { root, agentDir, savedEnv } = tempPiHome('pfm-project-recall-')
  const sessions = []
  try {
    const [main, worktree, other, plain] = ['app', 'app-feature', 'other', 'notes'].map((name) => join(root, name))
    for (const dir of [main, other, plain]) mkdirSync(dir, { recursive: true })
    git(main, 'init', '-q')
    git(main, 'commit', '-q', '--allow-empty', '-m', 'init')
    git(main, 'worktree', 'add', '-q', '-b', 'feature', worktree)
    git(other, 'init', '-q')
    const settingsFile = join(agentDir, 'settings.json')
    writeFileSync(settingsFile, JSON.stringify({ ...JSON.parse(readFileSync(settingsFile, 'utf8')), memory: { warmUp: false, tools: 'all' } }))
    const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
    const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
    const open = async (cwd) => {
      const session = await openSession(sdk, { packageDir: PACKAGE_DIR, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager: SessionManager.create(cwd) })
      sessions.push(session)
      return session
    }
    const ids = {}
    for (const [name, cwd] of [['main', main], ['other', other], ['plain', plain]]) {
      const session = await open(cwd)
      faux.setResponses([() => fauxAssistantMessage(fauxText(`The ossifrage setting of ${name} is on.`))])
      await session.prompt('what about the ossifrage?')
      ids[name] = session.sessionId
    }
    const here = await open(worktree)
    let text
    faux.setResponses([
      () => fauxAssistantMessage(fauxToolCall('memory_recall', { query: 'ossifrage' }, { id: 'r1' }), { stopReason: 'toolUse' }),
      (ctx) => {
        const result = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === 'r1')
        text = result.content.filter((b) => b.type === 'text').map((b) => b.text).join('')
        return fauxAssistantMessage(fauxText('ok'))
      },
    ])
    await here.prompt('what did we say about the ossifrage?')
    assert.match(text, new RegExp(ids.main.slice(0, 13)), text)
    assert.match(text, /ossifrage setting of main/)
    assert.doesNotMatch(text, new RegExp(ids.other.slice(0, 13)))
    assert.doesNotMatch(text, new RegExp(ids.plain.slice(0, 13)))
  } finally {
    teardown(sessions, savedEnv, root)
  }
})
