/** `forget`, `unforget`, `forgotten`: sessions (or entries of them) recall must never surface again (Pi's files are never touched). */
import type { ForgetArgs, ForgetResult } from 'pi-fabric-memory/native'
import { UsageError } from './args.mjs'
import { openMemory, requireSessions, type Context } from './context.mjs'
import { EXIT, printJson } from './output.mjs'
import { pageFailure } from './history.mjs'
import type { Command } from './command.mjs'
import { forgottenLine, forgottenName, forgottenText } from '../present/forgotten.mjs'
import { plural } from '../present/text.mjs'

function print(ctx: Context, result: ForgetResult, done: (result: ForgetResult) => string): void {
  if (ctx.json) {
    printJson(result)
    if (result.error) process.exitCode = EXIT.failure
    return
  }
  if (result.error) throw pageFailure(result.error)
  console.log(done(result))
}

/** `<session> [<entryId>]`: a session, or one entry of it, as `expand` names it. */
function target(ctx: Context, command: string): ForgetArgs {
  const [session, entryId, extra] = ctx.parsed.positional
  if (!session || extra !== undefined) throw new UsageError(`${command} needs <session> and at most one <entryId>`, command)
  return entryId === undefined ? { session } : { session, entryId }
}

async function forget(ctx: Context): Promise<void> {
  requireSessions(ctx)
  const result = await openMemory(ctx).forget(target(ctx, 'forget'))
  print(ctx, result, (r) =>
    r.changed.length
      ? `Forgot ${forgottenLine(r.changed[0])}\n(${plural(r.recordsRemoved, 'index record')} removed; Pi's file is untouched; \`unforget\` takes it back)`
      : `Already forgotten. ${forgottenText(r.forgotten)}`,
  )
}

async function unforget(ctx: Context): Promise<void> {
  const result = await openMemory(ctx).unforget(target(ctx, 'unforget'))
  print(ctx, result, (r) => `Remembered again: ${r.changed.map((s) => `${forgottenName(s)}  ${s.file}`).join(', ')}\n(recall indexes it again on its next call)`)
}

async function forgotten(ctx: Context): Promise<void> {
  print(ctx, await openMemory(ctx).forgotten(), (r) => forgottenText(r.forgotten))
}

const SESSION_DETAILS =
  '<session> is a session id, a unique prefix of one (at least 8 characters) or a session file\'s path; <entryId>, when given, ' +
  'names one entry of it (as `expand` takes it): only that entry is forgotten, the session\'s others stay found.'

export const FORGET_COMMANDS: Command[] = [
  {
    name: 'forget',
    summary: 'make recall never surface a session, or one entry of it, again (index records removed; Pi\'s file is kept)',
    usage: 'forget <session> [<entryId>]',
    details: `${SESSION_DETAILS}\nThe session stays forgotten, by its id and its file, when it changes, until \`unforget\`; an entry, by the session's id and its own.`,
    flags: ['json'],
    examples: ['forget 019e9a22-a7d6', 'forget 019e9a22-a7d6 a1b2c3d4', 'forget ~/.pi/agent/sessions/--home-me-app--/s.jsonl --json'],
    run: forget,
  },
  {
    name: 'unforget',
    summary: 'take a forget back: recall indexes the session (or the entry) again',
    usage: 'unforget <session> [<entryId>]',
    details: '<session> is the id, a unique prefix of it or the file, as `forgotten` lists it; <entryId> takes back that entry\'s forget only.',
    flags: ['json'],
    examples: ['unforget 019e9a22-a7d6', 'unforget 019e9a22-a7d6 a1b2c3d4'],
    run: unforget,
  },
  {
    name: 'forgotten',
    summary: 'list the forgotten sessions and entries',
    usage: 'forgotten',
    flags: ['json'],
    examples: ['forgotten', 'forgotten --json'],
    run: forgotten,
  },
]
