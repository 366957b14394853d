// Converts AsciiDoc pages as a docs build does (the CLI's default: unsafe mode, so includes,
// stylesheets and data-uri read files), one HTML file per page, for tests/docpages.
// Usage: node adoc.mjs <out-dir> <page.adoc>...
import fs from 'node:fs'
import path from 'node:path'
import { convertFile } from 'asciidoctor'

const [out, ...pages] = process.argv.slice(2)
for (const page of pages) {
  let html
  try {
    html = await convertFile(page, {
      safe: 'unsafe', standalone: true, to_file: false, base_dir: path.dirname(page),
      attributes: { linkcss: false, 'allow-uri-read': false },
    })
  } catch (error) {
    html = `failed: ${error}`
  }
  fs.writeFileSync(path.join(out, path.basename(page) + '.html'), String(html))
}
