/**
 * The CLI's flags: one table row per flag (a new flag is one line here plus
 * its name in the commands that accept it), parsed strictly: an unknown
 * flag, a missing value or a malformed number is a usage error naming it.
 */

export interface FlagSpec {
  /** Placeholder of the value (`DIR`, `N`); absent for a boolean flag. */
  value?: string
  /** The value must be a non-negative integer. */
  integer?: boolean
  help: string
}

export const FLAGS: Record<string, FlagSpec> = {
  'agent-dir': { value: 'DIR', help: "Pi's agent dir (default: PI_CODING_AGENT_DIR, else ~/.pi/agent)" },
  cwd: { value: 'DIR', help: 'the project directory (default: the current directory)' },
  'session-dir': { value: 'DIR', help: "Pi's custom session dir (default: PI_CODING_AGENT_SESSION_DIR, else the settings' sessionDir)" },
  'trust-project': { help: "also read the project's .pi/settings.json (Pi reads it only for trusted projects)" },
  json: { help: 'print one JSON document on stdout (stable shapes: see the README)' },
  'no-color': { help: 'no colour even on a terminal (NO_COLOR does the same)' },
  quiet: { help: 'no progress output' },
  help: { help: 'show this help' },
  version: { help: 'print the package version and the native addon version' },
  scope: { value: 'S', help: 'project (default), global, session or session:<id, id prefix or path>' },
  'branches-all': { help: 'every branch of each session, not only the active one' },
  mode: { value: 'M', help: 'literal (default), phrase or regex' },
  all: { help: 'every query word in one entry (literal mode)' },
  role: { value: 'R', help: 'only entries of this role (user, assistant, toolResult, …)' },
  tool: { value: 'T', help: 'only entries of this tool (bash, read, …)' },
  ref: { value: 'R', help: 'only entries of this operation ref (pi.bash, …)' },
  provider: { value: 'P', help: 'only entries of this operation provider' },
  action: { value: 'A', help: 'only entries of this operation action' },
  outcome: { value: 'O', help: 'succeeded, failed, aborted or timed_out' },
  since: { value: 'D', help: 'entries at or after this ISO date or epoch ms' },
  until: { value: 'D', help: 'entries at or before this ISO date or epoch ms' },
  'page-size': { value: 'N', integer: true, help: 'hits per page (default 10, at most 50)' },
  page: { value: 'N', integer: true, help: 'the Nth page of hits (default 1), reached by following each page\'s next call' },
  'max-tokens': { value: 'N', integer: true, help: 'pack: the token budget, JSON characters / 4 (default 2000, 400–7000)' },
  'max-sessions': { value: 'N', integer: true, help: 'pack: sessions cited at most (default 6, at most 20)' },
  create: { help: 'create the agent dir when it does not exist (a memory write refuses a missing one)' },
  target: { value: 'T', help: 'memory (MEMORY.md, the agent\'s notes; the default) or user (USER.md)' },
  before: { value: 'N', integer: true, help: 'entries of context before the selected one' },
  after: { value: 'N', integer: true, help: 'entries of context after the selected one' },
  calls: { help: 'memory why: also print the memory_expand call that reads each cited entry' },
}

/** Flags every command accepts. */
export const GLOBAL_FLAGS = ['agent-dir', 'cwd', 'session-dir', 'trust-project', 'no-color', 'help']

export class UsageError extends Error {
  readonly code = 'usage'
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message)
  }
}

export interface Parsed {
  positional: string[]
  options: Map<string, string | true>
}

/** The value a flag was given, or undefined. */
export function option(parsed: Parsed, name: string): string | undefined {
  const value = parsed.options.get(name)
  return typeof value === 'string' ? value : undefined
}

export function integerOption(parsed: Parsed, name: string): number | undefined {
  const value = option(parsed, name)
  return value === undefined ? undefined : Number(value)
}

/**
 * Splits `argv` into positionals and the flags `accepted` allows. `--` ends
 * the flags; `-h` is `--help`; `-` alone is a positional.
 */
export function parseArgs(argv: string[], accepted: readonly string[], command?: string): Parsed {
  const positional: string[] = []
  const options = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--') {
      positional.push(...argv.slice(i + 1))
      break
    }
    if (arg === '-h') options.set('help', true)
    else if (arg.startsWith('--')) {
      const eq = arg.indexOf('=')
      const name = arg.slice(2, eq < 0 ? undefined : eq)
      const spec = accepted.includes(name) ? FLAGS[name] : undefined
      if (!spec) throw new UsageError(`unknown flag --${name}${command ? ` for ${command}` : ''}`, command)
      if (!spec.value) {
        if (eq >= 0) throw new UsageError(`--${name} takes no value`, command)
        options.set(name, true)
        continue
      }
      const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i]
      if (value === undefined) throw new UsageError(`--${name} needs a value (${spec.value})`, command)
      if (spec.integer && !/^\d+$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`, command)
      options.set(name, value)
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new UsageError(`unknown flag ${arg}${command ? ` for ${command}` : ''}`, command)
    } else positional.push(arg)
  }
  return { positional, options }
}

/** The options block of a help text, in the order given; `help` replaces a flag's text for one command. */
export function flagLines(names: readonly string[], help: Record<string, string> = {}): string {
  const left = names.map((name) => `--${name}${FLAGS[name].value ? ` ${FLAGS[name].value}` : ''}`)
  const width = Math.max(...left.map((l) => l.length))
  return names.map((name, i) => `  ${left[i].padEnd(width)}  ${help[name] ?? FLAGS[name].help}`).join('\n')
}
