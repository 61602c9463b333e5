/**
 * Pi's name for a resolved cwd's session dir under `<agentDir>/sessions/` (its
 * SessionManager's default): one leading separator dropped, every `/`, `\`
 * and `:` made `-`, wrapped in `--…--`. The one JS copy: the demo, the tests,
 * the fixtures and the bench corpus all use it; a test holds it to Pi's own.
 */
export function encodeCwd(cwd: string): string {
  return `--${cwd.replace(/^[/\\]/, '').replace(/[/\\:]/g, '-')}--`
}
