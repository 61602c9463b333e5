/** The cross-process lock: an atomic `mkdir` of `<memoryDir>/dreaming.lock`, refreshed while held, taken over when stale. */

import { mkdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'

export const LOCK_DIR = 'dreaming.lock'
/** A lock whose mtime is older than this is abandoned (the holder refreshes it every {@link LOCK_REFRESH_MS}). */
export const LOCK_STALE_MS = 5 * 60_000
export const LOCK_REFRESH_MS = 30_000

export interface DreamLock {
  release(): void
}

/**
 * Takes `<memoryDir>/dreaming.lock` (atomic `mkdir`) or returns undefined at
 * once when another holder has it. A lock older than `staleMs` is taken over
 * by renaming it away first, so two hosts cannot both take over one stale lock.
 */
export function acquireLock(memoryDir: string, staleMs = LOCK_STALE_MS, now = Date.now()): DreamLock | undefined {
  mkdirSync(memoryDir, { recursive: true })
  const dir = join(memoryDir, LOCK_DIR)
  const take = (): boolean => {
    try {
      mkdirSync(dir)
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
      throw error
    }
  }
  if (!take()) {
    let mtime: number
    try {
      mtime = statSync(dir).mtimeMs
    } catch {
      return take() ? held(dir) : undefined
    }
    if (now - mtime < staleMs) return undefined
    const away = `${dir}.stale.${process.pid}.${Math.random().toString(36).slice(2)}`
    try {
      renameSync(dir, away)
    } catch {
      return undefined
    }
    rmSync(away, { recursive: true, force: true })
    if (!take()) return undefined
  }
  return held(dir)
}

function held(dir: string): DreamLock {
  const timer = setInterval(() => {
    try {
      const t = new Date()
      utimesSync(dir, t, t)
    } catch {}
  }, LOCK_REFRESH_MS)
  timer.unref?.()
  let released = false
  return {
    release() {
      if (released) return
      released = true
      clearInterval(timer)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
