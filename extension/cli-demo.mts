/** `demo`: a synthetic agent dir, and what memory sees in it. */
import { mkdtempSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { invocation, type Command } from './cli-command.mjs'
import { expandAll, printEntry, printRecall, printSessions } from './cli-history.mjs'
import { bold, dim } from './cli-output.mjs'
import { curatedDemo, DEMO_CWD, writeDemoAgentDir } from './demo.mjs'
import { createMemory } from './memory.mjs'

async function demo(): Promise<void> {
  const agentDir = join(mkdtempSync(join(tmpdir(), 'pi-fabric-memory-demo-')), 'agent')
  const files = writeDemoAgentDir(agentDir)
  // Give the files their sessions' ages, so "newest first" means something.
  files.forEach((file, i) => utimesSync(file, new Date(Date.UTC(2026, 10, 20 + i, 18)), new Date(Date.UTC(2026, 10, 20 + i, 18))))
  const memory = createMemory({ agentDir, cwd: DEMO_CWD })
  console.log(`${bold('Demo agent dir')} ${agentDir}\n`)
  console.log(bold('memory.sessions({scope: "project"})'))
  printSessions(await memory.sessions())
  console.log(`\n${bold('memory.recall({query: "timeout"})')}`)
  printRecall(await memory.recall({ query: 'timeout' }), 'timeout')
  console.log(`\n${bold('memory.recall({ref: "pi.bash", outcome: "failed"})')} ${dim('(typed fields only, no words)')}`)
  printRecall(await memory.recall({ ref: 'pi.bash', outcome: 'failed' }), undefined)
  console.log(`\n${bold('memory.expand')} the failed test run, with one entry of context on each side`)
  const checkout = (await memory.sessions()).sessions.at(-1)!
  const failed = await expandAll(memory, { session: checkout.id, indices: [4], before: 1, after: 1 })
  failed.entries.forEach(printEntry)
  console.log(`\n${bold('memory.walk')} the search session: active branch vs all branches`)
  const search = (await memory.sessions()).sessions[1]
  for (const branches of ['active', 'all'] as const) {
    const roles: string[] = []
    const walk = await memory.walk({ session: search.id, branches }, (entry) => void roles.push(entry.role ?? '?'))
    console.log(`  ${branches.padEnd(6)} visited ${walk.visited} entries: ${roles.join(' → ')}`)
  }
  const files2 = new Set<string>()
  await memory.walk({ session: checkout.id }, (entry) => {
    if (entry.role === 'assistant') entry.filesTouched.forEach((f) => files2.add(f))
  })
  console.log(`\n${bold('Files the agent touched')} in ${checkout.id.slice(0, 13)}…: ${[...files2].join(', ')}`)
  await curatedDemo(agentDir, { bold, dim })
  console.log(dim(`\nTry: ${invocation()} sessions --agent-dir ${agentDir} --cwd ${DEMO_CWD}`))
}

export const DEMO_COMMAND: Command = {
  name: 'demo',
  summary: 'index a synthetic agent dir and show what memory sees',
  usage: 'demo',
  flags: [],
  examples: ['demo'],
  run: () => demo(),
}
