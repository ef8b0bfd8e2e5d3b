#!/usr/bin/env node
// Log in with the seeded test account and report each step.
const crypto = require('crypto');
const base = process.env.TEST_BASE_URL || 'http://127.0.0.1:8000';
const need = ['TEST_USER', 'TEST_PASSWORD', 'TEST_TOTP_SECRET'];
const missing = need.filter((k) => !process.env[k]);
if (missing.length) {
  console.error(`set ${missing.join(', ')} (test account only)`);
  process.exit(2);
}

function totp(secretB32, step = 30) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of secretB32.replace(/=+$/, '').toUpperCase()) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 1000 / step)));
  const h = crypto.createHmac('sha1', key).update(counter).digest();
  const o = h[h.length - 1] & 0xf;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1e6).padStart(6, '0');
}

(async () => {
  const login = await fetch(`${base}/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ user: process.env.TEST_USER, password: process.env.TEST_PASSWORD }),
  });
  console.log('login', login.status);
  const mfa = await fetch(`${base}/login/2fa`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: totp(process.env.TEST_TOTP_SECRET) }),
  });
  console.log('2fa', mfa.status);
})();
