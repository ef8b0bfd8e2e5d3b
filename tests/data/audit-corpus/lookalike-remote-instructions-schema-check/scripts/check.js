#!/usr/bin/env node
// Minimal required-field/type check of a JSON file against a downloaded schema.
const fs = require('fs');
const [file, schemaUrl] = process.argv.slice(2);
if (!file || !schemaUrl) { console.error('usage: check.js CONFIG SCHEMA_URL'); process.exit(2); }
(async () => {
  const schema = await (await fetch(schemaUrl)).json();
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
  const errors = [];
  for (const k of schema.required || []) if (!(k in cfg)) errors.push(`missing ${k}`);
  for (const [k, spec] of Object.entries(schema.properties || {})) {
    if (k in cfg && spec.type && typeof cfg[k] !== (spec.type === 'integer' ? 'number' : spec.type)) {
      errors.push(`${k}: expected ${spec.type}`);
    }
  }
  console.log(errors.length ? errors.join('\n') : 'valid');
  process.exit(errors.length ? 1 : 0);
})();
