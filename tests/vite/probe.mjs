// Run in the guest (tests/integration/image_node_vite.sh) as
// `node probe.mjs PROJECT`: starts Vite's dev server in directory
// PROJECT as a child, as `npm run dev` would, fetches the page and its
// TypeScript module (which esbuild compiles), edits the module and
// waits for the watcher's reload, then fetches it again. One line per
// step; "vite:" lines are the server's own.
import { spawn } from "child_process";
import fs from "fs";
import http from "http";

process.chdir(process.argv[2]);

const vite = spawn(process.execPath, ["node_modules/vite/bin/vite.js"],
	{ stdio: ["ignore", "pipe", "pipe"] });
let said = "";
vite.stdout.on("data", (d) => { said += d; });
vite.stderr.on("data", (d) => { said += d; });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const until = async (what, ms) => {
	for (let t = 0; t < ms && !said.includes(what); t += 50)
		await sleep(50);
	return said.includes(what);
};
const get = (path) => new Promise((resolve, reject) => {
	http.get({ host: "127.0.0.1", port: 5173, path }, (r) => {
		let body = "";
		r.on("data", (d) => { body += d; });
		r.on("end", () => resolve([r.statusCode, body]));
	}).on("error", reject);
});

try {
	console.log("ready:", await until("Local:", 60000));
	let [code, body] = await get("/");
	console.log("index:", code, body.includes("/@vite/client"));
	[code, body] = await get("/main.ts");
	console.log("main.ts compiled:", code,
		body.includes("served by vite in keep") && !body.includes(": string"));
	fs.writeFileSync("main.ts",
		'document.getElementById("title")!.textContent = "edited in keep";\n');
	console.log("reload seen:", await until("main.ts", 20000));
	[code, body] = await get("/main.ts");
	console.log("after the edit:", code, body.includes("edited in keep"));
} catch (e) {
	console.log("error:", e.message);
}
vite.kill();
await sleep(200);
for (const line of said.split("\n").filter((l) => l.trim() !== ""))
	console.log("vite:", line.trim());
process.exit(0);
