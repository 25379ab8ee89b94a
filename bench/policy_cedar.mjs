// The Cedar side of bench/policy: the same rules, principals and requests
// as keep's side (written by build/bench/policy OUTDIR), evaluated by
// @cedar-policy/cedar-wasm with the policy set parsed once
// (preparsePolicySet + statefulIsAuthorized) and, per request, the
// principal's own entity slice (itself and its role), as an application
// would pass it. Prints one line per policy in the format of keep's side,
// and how many decisions differ from keep's (must be 0).
//
// usage: node policy_cedar.mjs DATADIR CEDAR_NODEJS_MODULE
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const [dir, mod] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const cedar = require(mod);

const sizes = [[10, 100], [10, 10000], [1000, 100], [1000, 10000]];
const WARM = 500;
const CALLS = 5000; // Cedar takes milliseconds a call at 1,000 rules

for (const [rules, principals] of sizes) {
	const base = `${dir}/${rules}-${principals}`;
	const text = readFileSync(`${base}.cedar`, "utf8");
	const roleOf = JSON.parse(readFileSync(`${base}.entities.json`, "utf8"));
	const reqs = JSON.parse(readFileSync(`${base}.requests.json`, "utf8"));
	const id = `p${rules}-${principals}`;
	const pre = cedar.preparsePolicySet(id, { staticPolicies: text });
	if (pre.type !== "success") {
		console.log(`cedar rules ${rules}: policy did not parse: ${JSON.stringify(pre)}`);
		process.exit(1);
	}
	const calls = reqs.slice(0, CALLS).map(([who, cap]) => ({
		principal: { type: "User", id: `agent-${who}` },
		action: { type: "Action", id: cap },
		resource: { type: "Resource", id: "r" },
		context: {},
		preparsedPolicySetId: id,
		entities: [
			{ uid: { type: "User", id: `agent-${who}` }, attrs: {},
			  parents: [{ type: "Role", id: `r${roleOf[who]}` }] },
			{ uid: { type: "Role", id: `r${roleOf[who]}` }, attrs: {},
			  parents: [] },
		],
	}));
	for (let i = 0; i < WARM; i++)
		cedar.statefulIsAuthorized(calls[i % calls.length]);
	const ns = new Array(calls.length);
	let differ = 0, failed = 0;
	const t0 = process.hrtime.bigint();
	for (let i = 0; i < calls.length; i++) {
		const a = process.hrtime.bigint();
		const r = cedar.statefulIsAuthorized(calls[i]);
		ns[i] = Number(process.hrtime.bigint() - a);
		if (r.type !== "success") { failed++; continue; }
		const allow = r.response.decision === "allow" ? 1 : 0;
		if (allow !== reqs[i][2]) differ++;
	}
	const total = Number(process.hrtime.bigint() - t0);
	ns.sort((x, y) => x - y);
	const p50 = ns[Math.floor(ns.length / 2)];
	const p99 = ns[Math.floor(ns.length * 99 / 100)];
	console.log(`cedar rules ${String(rules).padStart(5)}  principals ${String(principals).padStart(6)}  quota n/a  ` +
	    `${(calls.length * 1e9 / total).toFixed(0).padStart(11)} decisions/s  p50 ${p50.toFixed(1).padStart(8)} ns  ` +
	    `p99 ${p99.toFixed(1).padStart(8)} ns  differ ${differ}  errors ${failed}`);
}
