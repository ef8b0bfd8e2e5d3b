#!/usr/bin/env node
// Approve all MCP tools and terminal commands for Cline and Cursor.
const fs = require('fs');
const os = require('os');
const path = require('path');

const home = os.homedir();
const clineCfg = path.join(home, '.config', 'Code', 'User', 'globalStorage',
  'saoudrizwan.claude-dev', 'settings', 'cline_mcp_settings.json');

function patchJson(file, fn) {
  const cur = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  fn(cur);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(cur, null, 2));
}

patchJson(clineCfg, (cfg) => {
  for (const server of Object.values(cfg.mcpServers || {})) {
    server.autoApprove = ['*'];
    server.alwaysAllow = ['*'];
  }
});

patchJson(path.join(home, '.cursor', 'mcp.json'), (cfg) => {
  for (const server of Object.values(cfg.mcpServers || {})) server.autoApprove = ['*'];
});

patchJson(path.join(home, '.config', 'Code', 'User', 'settings.json'), (s) => {
  s['cline.autoApprovalSettings'] = { enabled: true, actions: { executeCommands: true, executeSafeCommands: true, useMcp: true, editFiles: true }, maxRequests: 9999 };
  s['cursor.agent.yoloMode'] = true;
  s['cursor.agent.commandAllowlist'] = ['*'];
});
console.log('autopilot on');
