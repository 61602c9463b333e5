/** `demo`: a synthetic agent dir, and what memory sees in it. */
import { existsSync, mkdtempSync, rmSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { invocation, type Command } from './command.mjs'
import { isDir, safeReaddir, type Context } from './context.mjs'
import { expandAll, printEntry, printRecall, printSessions } from './history.mjs'
import { bold, CliError, dim, EXIT } from './output.mjs'
import { curatedDemo, DEMO_CWD, writeDemoAgentDir } from './demo-agent-dir.mjs'
import { shortId } from '../present/text.mjs'
import { createMemory } from '../recall/create-memory.mjs'

/**
 * Where the demo writes: `--agent-dir DIR` when DIR is new or empty (kept, to
 * try the commands on; never written over), else a temp dir it removes when
 * it ends. `PI_CODING_AGENT_DIR` is not used: that is the user's real one.
 */
function demoDir(ctx: Context): { agentDir: string; remove?: () => void } {
  if (ctx.agentDirOrigin !== 'flag') {
    const root = mkdtempSync(join(tmpdir(), 'pi-fabric-memory-demo-'))
    return { agentDir: join(root, 'agent'), remove: () => rmSync(root, { recursive: true, force: true }) }
  }
  if (existsSync(ctx.agentDir) && (!isDir(ctx.agentDir) || safeReaddir(ctx.agentDir).length > 0)) {
    throw new CliError(`demo --agent-dir needs a new or empty directory; ${ctx.agentDir} is not (nothing written)`, 'agent_dir_not_empty', EXIT.usage)
  }
  return { agentDir: ctx.agentDir }
}

async function demo(ctx: Context): Promise<void> {
  const { agentDir, remove } = demoDir(ctx)
  try {
    await show(agentDir, remove === undefined)
  } finally {
    remove?.()
  }
}

async function show(agentDir: string, kept: boolean): Promise<void> {
  const files = writeDemoAgentDir(agentDir)
  // Give the files their sessions' ages, so "newest first" means something.
  files.forEach((file, i) => utimesSync(file, new Date(Date.UTC(2026, 10, 20 + i, 18)), new Date(Date.UTC(2026, 10, 20 + i, 18))))
  const memory = createMemory({ agentDir, cwd: DEMO_CWD })
  console.log(`${bold('Demo agent dir')} ${agentDir} ${dim(kept ? '(kept)' : '(a temp dir, removed when the demo ends; demo --agent-dir DIR keeps one)')}\n`)
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
  console.log(`\n${bold('Files the agent touched')} in ${shortId(checkout.id)}: ${[...files2].join(', ')}`)
  await curatedDemo(agentDir, { bold, dim })
  const tryDir = kept ? agentDir : join(tmpdir(), 'pfm-demo')
  if (!kept) console.log(dim(`\nKeep a demo agent dir: ${invocation()} demo --agent-dir ${tryDir}`))
  console.log(dim(`${kept ? '\n' : ''}Try: ${invocation()} sessions --agent-dir ${tryDir} --cwd ${DEMO_CWD}`))
}

export const DEMO_COMMAND: Command = {
  name: 'demo',
  summary: 'index a synthetic agent dir and show what memory sees',
  usage: 'demo [--agent-dir DIR]',
  details: 'Without --agent-dir the demo writes a temp dir and removes it when it ends. --agent-dir DIR (new or\nempty; never written over) keeps it, to try the other commands on.',
  flags: [],
  globalFlags: ['agent-dir', 'no-color', 'help'],
  flagHelp: { 'agent-dir': 'write the demo agent dir here and keep it (a new or empty directory)' },
  examples: ['demo', 'demo --agent-dir /tmp/pfm-demo'],
  run: demo,
}
