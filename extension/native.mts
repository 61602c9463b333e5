/**
 * The addon for ES modules. `pi-fabric-memory/native` is CommonJS (napi-rs's
 * generated loader); importing it from ESM makes Node run its CommonJS export
 * lexer over that loader, ~30 ms of a fresh process's ~40 ms import. Requiring
 * it costs only the load. Types come from the addon's own declarations.
 */
import { createRequire } from 'node:module'
import type * as Native from 'pi-fabric-memory/native'

const native: typeof Native = createRequire(import.meta.url)('pi-fabric-memory/native')

export type * from 'pi-fabric-memory/native'
/** `import native from 'pi-fabric-memory/native'`, as Node's CommonJS interop gave it: the loader's exports. */
export default native
export const MemoryEngine: typeof Native.MemoryEngine = native.MemoryEngine
export type MemoryEngine = Native.MemoryEngine
export const MemoryStore: typeof Native.MemoryStore = native.MemoryStore
export type MemoryStore = Native.MemoryStore
export const inspectCacheRecord: typeof Native.inspectCacheRecord = native.inspectCacheRecord
export const threatFlags: typeof Native.threatFlags = native.threatFlags
export const version: typeof Native.version = native.version
export const expandPiPath: typeof Native.expandPiPath = native.expandPiPath
export const piAgentDir: typeof Native.piAgentDir = native.piAgentDir
export const __napiBindingTarget: typeof Native.__napiBindingTarget = native.__napiBindingTarget
