/**
 * Output conventions of the CLI: colour only on a terminal and never with
 * `NO_COLOR` or `--no-color`; `--json` prints one document on stdout; exit
 * codes are a closed set.
 */

/** Exit codes (README, CLI): 0 done, 1 failed or a problem found, 2 usage, 3 no Pi sessions. */
export const EXIT = { ok: 0, failure: 1, usage: 2, noSessions: 3 } as const

/** A failure the CLI reports as `{error: {code, message}}` (with `--json`) or one line on stderr. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly exit: number = EXIT.failure,
    readonly hint?: string,
  ) {
    super(message)
  }
}

/** `NO_COLOR` set to anything but "" disables colour (no-color.org); so does a dumb terminal. */
export function colorAllowed(stream: { isTTY?: boolean }, noColorFlag: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && !noColorFlag && !env.NO_COLOR && env.TERM !== 'dumb'
}

let color = false

export function setColor(enabled: boolean): void {
  color = enabled
}

const sgr = (on: string, off: string) => (s: string) => (color ? `\x1b[${on}m${s}\x1b[${off}m` : s)
export const bold = sgr('1', '22')
export const dim = sgr('2', '22')
export const red = sgr('31', '39')
export const yellow = sgr('33', '39')
export const green = sgr('32', '39')
/** A highlighted match: reverse video, or `[…]` without colour so it stays visible. */
export const mark = (s: string) => (color ? `\x1b[7m${s}\x1b[27m` : `[${s}]`)

export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2))
}

export function table(rows: string[][]): string {
  // Widths by visible length: escape codes take no columns.
  const visible = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '').length
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => visible(r[c]))))
  return rows.map((r) => r.map((cell, c) => cell + ' '.repeat(widths[c] - visible(cell))).join('  ').trimEnd()).join('\n')
}

/** A timestamp to the minute, `2026-11-20 09:00`; `—` when there is none. */
export const minuteOf = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().slice(0, 16).replace('T', ' ') : '—')

/** A session id as the CLI prints it, `019e9a22-a7d6…` (a unique prefix of 8+ characters names the session). */
export const shortId = (id: string) => (id.length > 14 ? `${id.slice(0, 13)}…` : id)

export function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** `1 session`, `3 sessions`; `many` for an irregular plural (`entry`, `entries`). */
export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** `1.5 MB`, `820 kB`, `12 B` (decimal units, as file managers show). */
export function bytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`
  if (n >= 1e3) return `${Math.round(n / 1e3)} kB`
  return `${n} B`
}
