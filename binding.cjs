'use strict'
/**
 * The package's native entry (`pi-fabric-memory/native`, `require('pi-fabric-memory')`):
 * napi-rs's generated loader (`index.js`, kept exactly as `napi build` writes it), and,
 * when no binary fits this machine, an error that says which one was looked for and how
 * to get it, instead of the loader's generic "Cannot find native binding".
 */
const { name, version } = require('./package.json')

/** napi-rs's name for this machine: the suffix of `<name>-<triple>` and of `<binary>.<triple>.node`. */
function platformTriple() {
  const { platform, arch } = process
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null
    const glibc = report?.header?.glibcVersionRuntime
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`
  }
  return `${platform}-${arch}`
}

function missingBinding(cause) {
  const triple = platformTriple()
  const prebuilt = Object.keys(require('./package.json').optionalDependencies ?? {})
  const expected = `${name}-${triple}`
  const known = prebuilt.length === 0 || prebuilt.includes(expected)
  const error = new Error(
    [
      `${name}: no native addon for ${triple} (Node ${process.versions.node}).`,
      known
        ? `It comes from the optional dependency ${expected}@${version}, which is not installed or failed to load ` +
          '(an install with --omit=optional or --no-optional skips it; reinstalling the package fetches it).'
        : `No prebuilt package is published for ${triple} (${expected} does not exist).`,
      'To build it from source instead (needs a Rust toolchain >= 1.88, https://rustup.rs):',
      `  cd "${__dirname}" && npx --yes @napi-rs/cli@3 build --platform --release`,
    ].join('\n'),
  )
  error.code = 'native_binding_missing'
  error.cause = cause
  return error
}

try {
  module.exports = require('./index.js')
} catch (cause) {
  throw missingBinding(cause)
}
