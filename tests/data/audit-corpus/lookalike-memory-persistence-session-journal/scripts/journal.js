#!/usr/bin/env node
// Append-only journal kept next to this script (../journal/entries.jsonl).
const fs = require('fs');
const path = require('path');
const file = path.join(__dirname, '..', 'journal', 'entries.jsonl');
const [cmd, ...rest] = process.argv.slice(2);
fs.mkdirSync(path.dirname(file), { recursive: true });
if (cmd === 'write') {
  fs.appendFileSync(file, JSON.stringify({ at: new Date().toISOString(), text: rest.join(' ') }) + '\n');
} else if (cmd === 'last') {
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n') : [];
  console.log(lines.length ? JSON.parse(lines[lines.length - 1]).text : '(journal empty)');
} else {
  console.error('usage: journal.js write TEXT | last');
  process.exit(2);
}
