// Fault injection (issue 11): processes SIGKILLed at random moments while they
// build and write index records. Every record left on disk is an intact old or
// new one, and answers equal those of a clean rebuild. PFM_FAULT_RUNS sets the
// number of children actually killed mid-run (default 12; 1000 for the full scale).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { appendFileSync, existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { createMemory, inspectCacheRecord } from '../extension/index.mjs'
import { assertWholeListing, INDEX_DIR_LISTING, ROOT, SESSION_DIRS, tempAgent } from './helpers.mjs'

const line = (id: string, parentId: string | null, text: string) =>
  JSON.stringify({ type: 'message', id, parentId, timestamp: '2026-01-01T00:00:01.000Z', message: { role: 'user', content: text, timestamp: 1 } }) + '\n'

const runs = Number(process.env.PFM_FAULT_RUNS ?? 12)

test('random kills during index writes leave only intact records and identical answers', { timeout: Math.max(600_000, runs * 3_000) }, async () => {
  const agent = tempAgent()
  try {
    const last: string[] = []
    for (let i = 0; i < 24; i++) {
      const words = Array.from({ length: 200 }, (_, j) => `w${(i * 7 + j) % 97}`).join(' ')
      agent.write(`s${i}.jsonl`, JSON.stringify({ type: 'session', version: 3, id: `s${i}`, timestamp: '2026-01-01T00:00:00.000Z', cwd: agent.cwd }) + '\n' + line(`s${i}-0`, null, `${words} session${i}`))
      last.push(`s${i}-0`)
    }
    const indexDir = join(agent.root, 'index')
    const config = { indexDir, hotSessions: 6 }
    const script = `
      const { createMemory } = await import(${JSON.stringify(join(ROOT, 'dist/extension/index.mjs'))});
      const memory = createMemory({ agentDir: ${JSON.stringify(agent.agentDir)}, cwd: ${JSON.stringify(agent.cwd)}, config: ${JSON.stringify(config)} });
      process.stdout.write('go');
      await memory.sessions({ scope: 'global' });`
    let seed = 12345
    // The LCG's high bits: its low bits cycle with short periods.
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor((seed / 2 ** 31) * n))
    // How long after "go" a kill may land: within the time a child that was not killed took, so kills land
    // mid-run however fast this machine indexes (a fixed 50 ms let 9 in 10 children finish first here).
    let window = 50
    // A child that finished before its kill is no kill: runs go on until
    // `runs` children actually died of SIGKILL.
    let [kills, run] = [0, 0]
    for (; kills < runs; run++) {
      assert.ok(run < runs * 10, `only ${kills} of ${run} children were killed mid-run`)
      // Change a few sessions so the next process has records to rewrite.
      for (let k = 0; k < 3; k++) {
        const i = random(24)
        const id = `s${i}-${run}-${k}`
        appendFileSync(join(agent.projectDir, `s${i}.jsonl`), line(id, last[i], `append ${run} ${k} tail${random(50)}`))
        last[i] = id
      }
      // The kill lands at a random moment after the child starts indexing
      // (not while Node itself starts up).
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'ignore'] })
      let started = 0
      child.stdout.once('data', () => {
        started = performance.now()
        setTimeout(() => child.kill('SIGKILL'), random(window))
      })
      const signal = await new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
      if (signal === 'SIGKILL') kills++
      else if (started) window = Math.max(2, Math.floor((performance.now() - started) * 0.8))
      for (const name of existsSync(indexDir) ? readdirSync(indexDir) : []) {
        if (name.startsWith('.pi-fabric-memory-index') || name.includes('.tmp.') || name === INDEX_DIR_LISTING) continue
        if (name === SESSION_DIRS) assertWholeListing(join(indexDir, name))
        else assert.notEqual(inspectCacheRecord(join(indexDir, name)), null, `run ${run}: ${name} is torn`)
      }
    }
    console.log(`# ${kills} SIGKILLs mid-run in ${run} runs`)
    const survived = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config })
    const clean = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd, config: { ...config, indexDir: join(agent.root, 'clean') } })
    assert.deepEqual(await survived.sessions({ scope: 'global' }), await clean.sessions({ scope: 'global' }))
    for (const query of ['w5', 'session7', 'tail3 append', '"append 2"']) {
      const [a, b] = [await survived.recall({ query, scope: 'global' }), await clean.recall({ query, scope: 'global' })]
      assert.deepEqual(a, b, query)
    }
  } finally {
    agent.cleanup()
  }
})
