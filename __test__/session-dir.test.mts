// Pi's custom session dir as the shim resolves it (shared/settings.mts): the live
// SessionManager first, then PI_CODING_AGENT_SESSION_DIR, the trusted
// project's and the agent dir's `sessionDir`. The real-Pi path is in
// e2e/session-dir.test.mjs.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { liveSessionDir, sessionDirSetting } from '../extension/shared/settings.mjs'

const root = mkdtempSync(join(tmpdir(), 'pfm-sessiondir-'))
after(() => rmSync(root, { recursive: true, force: true }))
const agent = join(root, 'agent')
const project = join(root, 'project')
mkdirSync(agent, { recursive: true })
mkdirSync(join(project, '.pi'), { recursive: true })
const write = (file: string, value: unknown) => writeFileSync(file, JSON.stringify(value))

test('sessionDir: env, then the trusted project, then the agent dir; ~ expanded; blank ignored', () => {
  write(join(agent, 'settings.json'), { sessionDir: '~/pi-sessions' })
  write(join(project, '.pi', 'settings.json'), { sessionDir: '.pi/sessions' })
  assert.equal(sessionDirSetting(agent, project, true, { PI_CODING_AGENT_SESSION_DIR: '/env/dir' }), '/env/dir')
  assert.equal(sessionDirSetting(agent, project, true, {}), '.pi/sessions')
  assert.equal(sessionDirSetting(agent, project, false, {}), join(homedir(), 'pi-sessions'))
  write(join(agent, 'settings.json'), { sessionDir: '  ' })
  assert.equal(sessionDirSetting(agent, project, false, {}), undefined)
  writeFileSync(join(agent, 'settings.json'), '{ not json')
  assert.equal(sessionDirSetting(agent, project, false, { PI_CODING_AGENT_SESSION_DIR: '' }), undefined)
})

test("the live SessionManager's getSessionDir() wins; an in-memory session's empty dir falls back", () => {
  write(join(agent, 'settings.json'), { sessionDir: '/from/settings' })
  assert.equal(liveSessionDir({ getSessionDir: () => '/live/dir' }, agent, project, false), '/live/dir')
  const saved = process.env.PI_CODING_AGENT_SESSION_DIR
  delete process.env.PI_CODING_AGENT_SESSION_DIR
  try {
    assert.equal(liveSessionDir({ getSessionDir: () => '' }, agent, project, false), '/from/settings')
    assert.equal(liveSessionDir(undefined, agent, project, false), '/from/settings')
  } finally {
    if (saved !== undefined) process.env.PI_CODING_AGENT_SESSION_DIR = saved
  }
})
