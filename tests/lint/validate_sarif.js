// Validates `gpumem lint --format=sarif` output against the SARIF 2.1.0 JSON schema shipped
// by the npm package @microsoft/jest-sarif (sarif-2.1.0-rtm.5.json, the OASIS schema of the
// final 2.1.0 release candidate), with Ajv's draft-04 validator and formats.
// usage: node validate_sarif.js NODE_MODULES LINT_BINARY PATHS...
'use strict';
const path = require('path');
const fs = require('fs');
const { spawnSync } = require('child_process');

const [nodeModules, lintBinary, ...paths] = process.argv.slice(2);
const Ajv = require(path.join(nodeModules, 'ajv-draft-04'));
const addFormats = require(path.join(nodeModules, 'ajv-formats'));
const schemaFile = path.join(nodeModules, '@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json');
const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8'));

const run = spawnSync(lintBinary, ['--format=sarif', '--no-config', ...paths], { encoding: 'utf8', maxBuffer: 1 << 28 });
if (run.status !== 0 && run.status !== 1) {
  console.error(`lint exited with ${run.status}: ${run.stderr}`);
  process.exit(1);
}
const log = JSON.parse(run.stdout);
const ajv = new Ajv({ allErrors: true, strict: false, unicodeRegExp: false });
addFormats(ajv);
const validate = ajv.compile(schema);
if (!validate(log)) {
  console.error(JSON.stringify(validate.errors, null, 2));
  console.error('FAIL: the SARIF log does not match the schema');
  process.exit(1);
}
const results = log.runs[0].results;
// What the issue asks of the log beyond the schema.
const problems = [];
if (results.length === 0) problems.push('no results to validate');
for (const r of results) {
  if (!/^GM00[1-7]$/.test(r.ruleId)) problems.push(`bad ruleId ${r.ruleId}`);
  if (log.runs[0].tool.driver.rules[r.ruleIndex].id !== r.ruleId) problems.push('ruleIndex does not point at ruleId');
  if (!r.partialFingerprints || !r.partialFingerprints['gpumemLintHash/v1']) problems.push('no partialFingerprints');
}
if (problems.length) {
  console.error(problems.slice(0, 10).join('\n'));
  process.exit(1);
}
console.log(`SARIF 2.1.0 schema: valid (${results.length} results, ${log.runs[0].tool.driver.rules.length} rules)`);
