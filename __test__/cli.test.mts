// The CLI a newcomer runs first: the demo must show sessions, an expansion
// with context, and the active/all walk difference.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { ROOT } from './helpers.mjs'

const cli = join(ROOT, 'dist/extension/cli.mjs')

test('demo indexes a synthetic agent dir and shows what memory sees', () => {
  const out = execFileSync(process.execPath, [cli, 'demo'], { encoding: 'utf8' })
  assert.match(out, /019a0003-demo-7000-8000-release00003 {2}5 /)
  assert.match(out, /#4 \S+ toolResult tool=bash outcome=failed ◀/)
  assert.match(out, /active visited 8 entries/)
  assert.match(out, /all {4}visited 10 entries/)
  assert.match(out, /Files the agent touched .*: src\/checkout\/service\.ts/)
})

test('expand --json prints the exact API result; errors exit non-zero', () => {
  const demo = execFileSync(process.execPath, [cli, 'demo'], { encoding: 'utf8' })
  const agentDir = /Demo agent dir (\S+)/.exec(demo)![1]
  const json = execFileSync(process.execPath, [cli, 'expand', '019a0001-demo-7000-8000-checkout0001', '0', '--json', '--agent-dir', agentDir], { encoding: 'utf8' })
  const page = JSON.parse(json)
  assert.equal(page.entries[0].text, 'The checkout test times out on CI. Find out why and fix it.')
  assert.throws(() => execFileSync(process.execPath, [cli, 'expand', 'missing-session', '0', '--agent-dir', agentDir], { stdio: 'pipe' }), /session_not_found/)
})
