#!/usr/bin/env node
/**
 * `pi-fabric-memory`: the command line over Pi session history and curated
 * memory. Each command lives in its own `cli/*.mts` module; this file finds
 * the command, parses its flags strictly, and turns failures into one
 * message (or one JSON document) and an exit code (see `EXIT`).
 */
import { readFileSync } from 'node:fs'
import { FLAGS, parseArgs, UsageError } from './cli/args.mjs'
import { acceptedFlags, BIN, commandHelp, mainHelp, type Command } from './cli/command.mjs'
import { createContext } from './cli/context.mjs'
import { DEMO_COMMAND } from './cli/demo.mjs'
import { DOCTOR_COMMAND } from './cli/doctor.mjs'
import { FORGET_COMMANDS } from './cli/forget.mjs'
import { HISTORY_COMMANDS } from './cli/history.mjs'
import { INDEX_COMMAND } from './cli/index-command.mjs'
import { MEMORY_COMMAND } from './cli/memory.mjs'
import { CliError, colorAllowed, EXIT, printJson, setColor } from './cli/output.mjs'
import { version } from './native.mjs'

const COMMANDS: Command[] = [...HISTORY_COMMANDS, ...FORGET_COMMANDS, INDEX_COMMAND, MEMORY_COMMAND, DOCTOR_COMMAND, DEMO_COMMAND]

/** The command word: the first argument that is neither a flag nor a flag's value. */
function commandIndex(argv: string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (!arg.startsWith('-') || arg === '-') return i
    if (arg === '--') return -1
    if (!arg.includes('=') && FLAGS[arg.slice(2)]?.value) i++
  }
  return -1
}

async function main(argv: string[]): Promise<void> {
  const at = commandIndex(argv)
  const name = at < 0 ? undefined : argv[at]
  const rest = at < 0 ? argv : [...argv.slice(0, at), ...argv.slice(at + 1)]
  if (name === 'help') return void console.log(argv[at + 1] ? helpOf(argv[at + 1]) : mainHelp(COMMANDS))
  const command = COMMANDS.find((c) => c.name === name)
  if (!command) {
    const parsed = parseArgs(rest, ['help', 'version', 'no-color', 'json'])
    setColor(colorAllowed(process.stdout, parsed.options.has('no-color')))
    if (name !== undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}`)
    if (parsed.options.has('help')) return void console.log(mainHelp(COMMANDS))
    if (parsed.options.has('version')) return printVersion(parsed.options.has('json'))
    console.error(mainHelp(COMMANDS))
    process.exitCode = EXIT.usage
    return
  }
  const parsed = parseArgs(rest, acceptedFlags(command), command.name)
  setColor(colorAllowed(process.stdout, parsed.options.has('no-color')))
  if (parsed.options.has('help')) return void console.log(commandHelp(command))
  try {
    await command.run(createContext(parsed))
  } catch (error) {
    // A value the addon rejects (`--scope nonsense`) is a usage error of this command.
    if ((error as { code?: string }).code === 'invalid_argument') throw new UsageError((error as Error).message, command.name)
    throw error
  }
}

/**
 * `--version`: package.json's version (found from this file: dist/extension/
 * when built, extension/ in the tests) and the loaded addon's own version.
 */
function printVersion(json: boolean): void {
  const here = new URL('.', import.meta.url)
  const manifest = new URL(here.pathname.endsWith('/dist/extension/') ? '../../package.json' : '../package.json', here)
  const versions = { package: (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version, addon: version() }
  if (json) printJson(versions)
  else console.log(`${BIN} ${versions.package} (native addon ${versions.addon})`)
}

function helpOf(name: string): string {
  const command = COMMANDS.find((c) => c.name === name)
  if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)}`)
  return commandHelp(command)
}

/** One failure, as JSON on stdout with `--json`, else a message and a hint on stderr. */
function report(error: Error & { code?: string }): number {
  const usage = error instanceof UsageError
  const exit = usage ? EXIT.usage : error instanceof CliError ? error.exit : EXIT.failure
  const hint = usage
    ? `see ${BIN} ${error.command ? `${error.command} ` : ''}--help`
    : error instanceof CliError
      ? error.hint
      : undefined
  if (process.argv.includes('--json')) printJson({ error: { code: error.code ?? 'internal_error', message: error.message } })
  else {
    const code = error.code && !usage ? `[${error.code}] ` : ''
    console.error(`${BIN}: ${code}${error.message}${hint ? `\n${hint}` : ''}`)
  }
  return exit
}

// `… | head` closes stdout early: that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  throw error
})

/**
 * Exits as soon as stdout and stderr have taken everything written (a write's
 * callback runs after the writes queued before it). Every command awaits its
 * own work, so nothing is left to run; an exit by an empty event loop would
 * first tear the environment down: the engine's finalizer frees its whole
 * index, then the JS heap, time the caller of a one-shot command waits for.
 */
function exitWhenFlushed(): void {
  let pending = 2
  const flushed = () => void (--pending === 0 && process.exit())
  process.stdout.write('', flushed)
  process.stderr.write('', flushed)
}

main(process.argv.slice(2))
  .catch((error: Error & { code?: string }) => {
    process.exitCode = report(error)
  })
  .finally(exitWhenFlushed)
