/**
 * Text shapes every reader of this package's output sees the same way, in
 * the CLI, Pi's TUI, `/memory` and the model's view: times to the minute,
 * short session ids, one-line excerpts, counts and sizes.
 */

/** A timestamp to the minute, `2026-11-20 09:00`; `—` when there is none. */
export const minuteOf = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().slice(0, 16).replace('T', ' ') : '—')

/** A session id as the CLI prints it, `019e9a22-a7d6…` (a unique prefix of 8+ characters names the session). */
export const shortId = (id: string) => (id.length > 14 ? `${id.slice(0, 13)}…` : id)

export function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/** `1 session`, `3 sessions`, `2 entries` (a consonant and `y`: `ies`); `many` for another irregular plural. */
export const plural = (n: number, one: string, many = /[^aeiou]y$/.test(one) ? `${one.slice(0, -1)}ies` : `${one}s`) => `${n} ${n === 1 ? one : many}`

/** `1.5 MB`, `820 kB`, `12 B` (decimal units, as file managers show). */
export function bytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`
  if (n >= 1e3) return `${Math.round(n / 1e3)} kB`
  return `${n} B`
}
