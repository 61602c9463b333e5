/** Bounded reads of files this package keeps, as the Rust side reads them (`src/fsread.rs`). */

import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'

/**
 * The text of a regular file of at most `limit` bytes. Opened non-blocking and checked on the open descriptor,
 * so a FIFO, a device or a huge (sparse) file at the path throws at once instead of blocking the event loop or
 * growing memory.
 */
export function readRegularText(path: string, limit: number): string {
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: 'not_regular_file' })
    if (stat.size > limit) throw Object.assign(new Error(`${path} is over ${limit} bytes`), { code: 'file_too_large' })
    const bytes = Buffer.alloc(stat.size)
    let read = 0
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read)
      if (n === 0) break
      read += n
    }
    return bytes.subarray(0, read).toString('utf8')
  } finally {
    closeSync(fd)
  }
}
