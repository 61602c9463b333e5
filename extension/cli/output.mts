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
