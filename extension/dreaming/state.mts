/** The state file (`<memoryDir>/dreaming-state.json`) and the gates it opens. */

import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readRegularText } from '../shared/bounded-read.mjs'
import type { DreamingSettings } from './settings.mjs'

export const STATE_FILE = 'dreaming-state.json'

export interface DreamingState {
  /** ISO time the last successful run started; null = never ran. */
  lastConsolidatedAt: string | null
  /** Turns that run read (the newest that fit its transcript budget). */
  lastTurnCount: number
  /** Candidates that run dropped because their evidence did not verify (absent in older files). */
  lastDropped?: number
}

const NEVER: DreamingState = { lastConsolidatedAt: null, lastTurnCount: 0 }

/** A state file is a few dozen bytes; anything past this is not one. */
const MAX_STATE_BYTES = 64 * 1024

/** The state; a missing, unreadable, malformed or special file (a FIFO never blocks) is "never ran". */
export function readState(memoryDir: string): DreamingState {
  try {
    const raw = JSON.parse(readRegularText(join(memoryDir, STATE_FILE), MAX_STATE_BYTES)) as Record<string, unknown>
    const at = raw?.lastConsolidatedAt
    if (typeof at !== 'string' || Number.isNaN(Date.parse(at))) return { ...NEVER }
    const count = raw.lastTurnCount ?? raw.lastSessionCount
    const dropped = typeof raw.lastDropped === 'number' && raw.lastDropped >= 0 ? { lastDropped: raw.lastDropped } : {}
    return { lastConsolidatedAt: at, lastTurnCount: typeof count === 'number' && count >= 0 ? count : 0, ...dropped }
  } catch {
    return { ...NEVER }
  }
}

/** Writes the state atomically: a temp file in the same directory, then rename. */
export function writeState(memoryDir: string, state: DreamingState): void {
  mkdirSync(memoryDir, { recursive: true })
  const file = join(memoryDir, STATE_FILE)
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  try {
    writeFileSync(temp, JSON.stringify(state, null, 2) + '\n')
    renameSync(temp, file)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
}

/** Whether the time gate is open; `force` (`/memory dream`) ignores it. */
export function timeGate(state: DreamingState, settings: DreamingSettings, now: number): { open: boolean; nextAt?: number } {
  if (!state.lastConsolidatedAt) return { open: true }
  const nextAt = Date.parse(state.lastConsolidatedAt) + settings.minHoursSinceLastRun * 3_600_000
  return { open: now >= nextAt, nextAt }
}

export const turnGate = (turns: number, settings: DreamingSettings) => turns >= settings.minTurnsSinceLastRun
