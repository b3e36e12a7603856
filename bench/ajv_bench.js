// ajv side of bench/validate_bench.lua: node bench/ajv_bench.js <cases.json>
// cases: [{ name, draft ("2020-12" | "draft7"), schema (JSON value),
//           instance (JSON text) }, ...]. For each case prints one line
//   <name> <ns per validate> <ns per JSON.parse + validate>
// (best of ROUNDS rounds). Formats are not asserted (validateFormats: false),
// as on the Lua side.
"use strict";
const fs = require("fs");
const Ajv = require("ajv");
const Ajv2020 = require("ajv/dist/2020");

const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const ROUNDS = Number(process.env.BENCH_ROUNDS || 15);
const opts = { strict: false, allErrors: true, validateFormats: false };

function best(fn, n) {
  let min = Infinity;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn();
    const dt = Number(process.hrtime.bigint() - t0) / n;
    if (dt < min) min = dt;
  }
  return min;
}

let sink = 0;
for (const c of cases) {
  const ajv = c.draft === "2020-12" ? new Ajv2020(opts) : new Ajv(opts);
  const schema = Object.assign({}, c.schema);
  delete schema.$schema;
  const validate = ajv.compile(schema);
  const value = JSON.parse(c.instance);
  if (!validate(value)) {
    console.error("ajv rejects " + c.name + ": " + JSON.stringify(validate.errors).slice(0, 300));
  }
  // size n so that one round takes ~20 ms
  let n = 1000;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) if (validate(value)) sink++;
    if (Number(process.hrtime.bigint() - t0) > 2e7 || n > 1e7) break;
    n *= 4;
  }
  const v = best(() => { if (validate(value)) sink++; }, n);
  const pv = best(() => { if (validate(JSON.parse(c.instance))) sink++; }, Math.max(1, n >> 2));
  console.log(c.name + " " + v.toFixed(1) + " " + pv.toFixed(1));
}
if (sink < 0) console.log(sink);
