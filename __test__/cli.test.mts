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
  assert.match(out, /toolResult\(bash\) \[error\]: FAIL test\/checkout\.test\.ts .*\[Timeout\] of 5000ms/)
  assert.match(out, /1 of 1 hits · 3\/3 sessions indexed · coverage complete/)
})

test('recall and index print readable results; --json the exact API result', () => {
  const demo = execFileSync(process.execPath, [cli, 'demo'], { encoding: 'utf8' })
  const agentDir = /Demo agent dir (\S+)/.exec(demo)![1]
  const where = ['--agent-dir', agentDir, '--cwd', '/home/demo/webshop']
  assert.match(execFileSync(process.execPath, [cli, 'index', ...where], { encoding: 'utf8' }), /^indexed 3 of 3 sessions in \d+ ms · coverage complete/)
  const human = execFileSync(process.execPath, [cli, 'recall', 'pricing', ...where], { encoding: 'utf8' })
  assert.match(human, /\[pricing\]/)
  const page = JSON.parse(execFileSync(process.execPath, [cli, 'recall', 'pricing', '--json', ...where], { encoding: 'utf8' }))
  assert.equal(page.total, 5, 'every entry that says pricing')
  assert.equal(page.coverage.complete, true)
  assert.equal(page.hits[0].kind, 'entry')
  const failed = JSON.parse(execFileSync(process.execPath, [cli, 'recall', '--ref', 'pi.bash', '--outcome', 'failed', '--json', ...where], { encoding: 'utf8' }))
  assert.deepEqual(failed.hits.map((h: { outcome: string }) => h.outcome), ['failed'])
})

test('expand --json prints the exact API result; errors exit non-zero', () => {
  const demo = execFileSync(process.execPath, [cli, 'demo'], { encoding: 'utf8' })
  const agentDir = /Demo agent dir (\S+)/.exec(demo)![1]
  const json = execFileSync(process.execPath, [cli, 'expand', '019a0001-demo-7000-8000-checkout0001', '0', '--json', '--agent-dir', agentDir], { encoding: 'utf8' })
  const page = JSON.parse(json)
  assert.equal(page.entries[0].text, 'The checkout test times out on CI. Find out why and fix it.')
  assert.throws(() => execFileSync(process.execPath, [cli, 'expand', 'missing-session', '0', '--agent-dir', agentDir], { stdio: 'pipe' }), /session_not_found/)
})
