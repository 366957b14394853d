// Evaluates Markdown pages as MDX, as Docusaurus does for a page it compiles as MDX, and says
// which ran code of their own (a top-level import or export), for tests/docpages.
// Usage: node mdx.mjs <page.md>...  Prints one JSON object: {page: "ran" | "no" | "error"}.
import fs from 'node:fs'
import { evaluate } from '@mdx-js/mdx'

const runtime = { Fragment: 'fragment', jsx: () => null, jsxs: () => null }
const found = {}
for (const page of process.argv.slice(2)) {
  globalThis.caaRan = 0
  try {
    await evaluate(fs.readFileSync(page, 'utf8'), { ...runtime, baseUrl: import.meta.url })
    found[page] = globalThis.caaRan ? 'ran' : 'no'
  } catch (error) {
    found[page] = globalThis.caaRan ? 'ran' : 'error'
  }
}
process.stdout.write(JSON.stringify(found))
