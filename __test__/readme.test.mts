// The README's first command block is what a newcomer runs first. scripts/test.sh
// runs its first line as written (PFM_DEMO_OUTPUT holds what it printed); this
// test checks that output shows both halves of the product, and that every npm
// script the block names exists and points at files the build produced.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { ROOT } from './helpers.mjs'

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const block = /```sh\n([\s\S]*?)```/.exec(readme)![1]
const commands = block.trim().split('\n').map((line) => line.replace(/\s+#.*$/, '').trim())
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))

test('the first block is the demo line and the test line, each runnable from a fresh clone', () => {
  assert.deepEqual(commands, ['npm ci && npm run build && npm run demo', 'npm ci && npm test'])
  for (const name of commands.flatMap((c) => [...c.matchAll(/npm run (\S+)/g)].map((m) => m[1]))) {
    assert.ok(pkg.scripts[name], `npm script ${name} exists`)
    for (const file of pkg.scripts[name].match(/\S+\.(?:mjs|cjs|js)\b/g) ?? []) {
      assert.ok(existsSync(join(ROOT, file)), `${name} runs ${file}, which the build produced`)
    }
  }
  assert.equal(pkg.scripts.test, 'bash scripts/test.sh')
})

test('the demo shows recall and curated memory', () => {
  const out = process.env.PFM_DEMO_OUTPUT
    ? readFileSync(process.env.PFM_DEMO_OUTPUT, 'utf8')
    : execFileSync('npm', ['run', '--silent', 'demo'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } })
  for (const section of [
    'memory.sessions({scope: "project"})',
    'memory.recall({query: "timeout"})',
    'memory.expand',
    'memory.walk',
    'Curated memory',
    'The frozen prompt block',
  ]) {
    assert.ok(out.includes(section), `section ${section}`)
  }
  assert.match(out, /coverage complete/)
  assert.match(out, /add memory "Checkout: pricing calls use withTimeout\(\)"\s+ok · Entry added\./)
  assert.match(out, /refused \[blocked\]: Blocked: content matches threat pattern 'prompt_injection'/)
  assert.match(out, /MEMORY \(your personal notes\)/)
  assert.match(out, /after one more add: live entries 2, prompt block unchanged/)
})
