// The agent dir and user-given paths, read as Pi reads them: the addon's one
// rule (`src/pi_path.rs`) against Pi's own `normalizePath` and `getAgentDir`
// from both Pi lines, and the shim's readers (settings, CLI) through it.
import assert from 'node:assert/strict'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { expandPiPath, piAgentDir } from 'pi-fabric-memory'
import { createContext } from '../extension/cli/context.mjs'
import { GLOBAL_FLAGS, parseArgs } from '../extension/cli/args.mjs'
import { agentDir, sessionDirSetting } from '../extension/shared/settings.mjs'
import { ROOT } from './helpers.mjs'

type PiPaths = { normalizePath(path: string): string }
type PiConfig = { getAgentDir(): string }
const piLines = await Promise.all(
  ['@earendil-works/pi-coding-agent', 'pi-coding-agent-1x'].map(async (name) => {
    const dist = pathToFileURL(join(ROOT, 'node_modules', name, 'dist')).href
    const paths = (await import(`${dist}/utils/paths.js`)) as PiPaths
    const config = (await import(`${dist}/config.js`)) as PiConfig
    return { name, ...paths, ...config }
  }),
)

const saved = process.env.PI_CODING_AGENT_DIR
after(() => {
  if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR
  else process.env.PI_CODING_AGENT_DIR = saved
})

const INPUTS = [
  '~', '~/', '~/a', '~/a/', '~/a/.', '~/a/../', '~/a/./b/../c', '~//a', '~/../..', '~user/x', 'a/~/b', 'rel/dir', './rel', '../up', '/abs/dir', '/abs/dir/',
  'file:///x', 'file:///x/y/', 'file://localhost/x', 'file:///a%20b/%C3%A9', 'file:///a/./b/../c?q=1#frag',
  'file:///a/%2e%2E/b', 'file:///a/..', 'file://', 'file:///~/x', 'file:///a b', 'file:///a\\b', 'file:///x\t/y',
  'file:x', 'FILE:///x',
]
// Inputs Pi refuses (its `fileURLToPath` throws): the addon keeps them as given.
const REFUSED = ['file://host/x', 'file:///a%2Fb', 'file:///a%zz', 'file:///%ff']

for (const pi of piLines) {
  test(`${pi.name}: expandPiPath is Pi's normalizePath`, () => {
    for (const input of INPUTS) assert.equal(expandPiPath(input), pi.normalizePath(input), JSON.stringify(input))
    for (const input of REFUSED) {
      assert.throws(() => pi.normalizePath(input), `Pi refuses ${input}`)
      assert.equal(expandPiPath(input), input)
    }
  })

  test(`${pi.name}: the shim's agent dir is Pi's getAgentDir`, () => {
    for (const value of [undefined, '', ...INPUTS]) {
      if (value === undefined) delete process.env.PI_CODING_AGENT_DIR
      else process.env.PI_CODING_AGENT_DIR = value
      assert.equal(agentDir(), pi.getAgentDir(), JSON.stringify(value))
      assert.equal(piAgentDir(value), pi.getAgentDir(), JSON.stringify(value))
    }
  })
}

test('the session dir setting and the CLI flags go through the same rule', () => {
  assert.equal(sessionDirSetting('/nowhere', '/nowhere', false, { PI_CODING_AGENT_SESSION_DIR: 'file:///srv/s%20d' }), '/srv/s d')
  assert.equal(sessionDirSetting('/nowhere', '/nowhere', false, { PI_CODING_AGENT_SESSION_DIR: '~/s' }), join(homedir(), 's'))
  const ctx = createContext(parseArgs(['--agent-dir', 'file:///srv/agent', '--session-dir', '~/flat'], GLOBAL_FLAGS))
  assert.equal(ctx.agentDir, '/srv/agent')
  assert.equal(ctx.sessionDir, join(homedir(), 'flat'))
})
