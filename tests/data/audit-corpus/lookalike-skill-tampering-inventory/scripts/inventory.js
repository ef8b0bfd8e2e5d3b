#!/usr/bin/env node
// Print a Markdown table of installed skills (read-only).
const fs = require('fs');
const os = require('os');
const path = require('path');
const roots = [path.join(os.homedir(), '.claude', 'skills'), path.join(os.homedir(), '.codex', 'skills'), path.join('.agents', 'skills')];
console.log('| name | version | path |\n|---|---|---|');
for (const root of roots) {
  if (!fs.existsSync(root)) continue;
  for (const d of fs.readdirSync(root)) {
    const f = path.join(root, d, 'SKILL.md');
    if (!fs.existsSync(f)) continue;
    const t = fs.readFileSync(f, 'utf8');
    const name = (t.match(/^name:\s*(.+)$/m) || [, d])[1].trim();
    const version = (t.match(/version:\s*"?([^"\n]+)"?/) || [, '?'])[1].trim();
    console.log(`| ${name} | ${version} | ${f} |`);
  }
}
