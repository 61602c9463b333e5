/** One CLI command: its help (usage, flags, examples) and what it runs. */
import { realpathSync } from 'node:fs'
import { delimiter, isAbsolute, join, relative } from 'node:path'
import { flagLines, GLOBAL_FLAGS, type Parsed } from './args.mjs'
import type { Context } from './context.mjs'
import { bold } from './output.mjs'

export const BIN = 'pi-fabric-memory'

/**
 * How to run this CLI again from the user's shell: its name when PATH finds
 * this very file (`npm link` in a checkout, a global install; under `npx`,
 * `npx` and the name), else `node` and this file (a checkout's `npm run demo`,
 * where the name is on no PATH), relative to the cwd when it lies under it.
 */
export function invocation(): string {
  const script = process.argv[1]
  const sameFile = (path: string) => {
    try {
      return realpathSync(path) === realpathSync(script)
    } catch {
      return false
    }
  }
  if ((process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && sameFile(join(dir, BIN)))) {
    return process.env.npm_command === 'exec' ? `npx ${BIN}` : BIN
  }
  const near = relative(process.cwd(), script)
  const shown = near && !near.startsWith('..') && !isAbsolute(near) ? near : script
  return `node ${/^[\w./@:+-]+$/.test(shown) ? shown : `'${shown.replace(/'/g, "'\\''")}'`}`
}

export interface Command {
  name: string
  summary: string
  usage: string
  /** Flags besides the global ones, in help order. */
  flags: string[]
  /** The global flags this command takes, when not all of them (a flag it would ignore is refused instead). */
  globalFlags?: string[]
  /** A flag's help text where this command differs from the shared one (e.g. another default). */
  flagHelp?: Record<string, string>
  examples: string[]
  /** Extra help text (subcommands), printed after the usage line. */
  details?: string
  run(ctx: Context): Promise<void>
}

/** A word as a POSIX shell reads it back: bare when that is safe, else single-quoted. */
const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`)

/**
 * The command line that runs `command` with these arguments, ready to paste
 * (flags after the positionals; positionals that look like flags after `--`).
 */
export function commandLine(command: string, parsed: Parsed): string {
  const flags = [...parsed.options].flatMap(([name, value]) => (value === true ? [`--${name}`] : [`--${name}`, value]))
  const dashed = parsed.positional.some((word) => word.startsWith('-'))
  const words = dashed ? [...flags, '--', ...parsed.positional] : [...parsed.positional, ...flags]
  return [BIN, command, ...words].map(shellWord).join(' ')
}

export const acceptedFlags = (command: Command) => [...command.flags, ...(command.globalFlags ?? GLOBAL_FLAGS)]

export function commandHelp(command: Command): string {
  return [
    `${bold(`${BIN} ${command.name}`)} — ${command.summary}`,
    '',
    `Usage: ${BIN} ${command.usage}`,
    ...(command.details ? ['', command.details] : []),
    '',
    'Options:',
    flagLines(acceptedFlags(command), command.flagHelp),
    '',
    'Examples:',
    ...command.examples.map((example) => `  ${BIN} ${example}`),
  ].join('\n')
}

export function mainHelp(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length))
  return [
    `${bold(BIN)} — recall over Pi session history and curated memory, from the shell`,
    '',
    `Usage: ${BIN} <command> [options]      ${BIN} <command> --help for its options and examples`,
    `       ${BIN} --version                the package version and the native addon's`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Options of every command (demo takes only --agent-dir):',
    flagLines(GLOBAL_FLAGS),
    '',
    'Exit codes: 0 done, 1 failed (or doctor found a problem), 2 usage error, 3 no Pi sessions found.',
    '',
    'Examples:',
    `  ${BIN} doctor`,
    `  ${BIN} index`,
    `  ${BIN} recall checkout timeout --scope global`,
    `  ${BIN} memory add --target user "Prefers tabs over spaces"`,
  ].join('\n')
}
