// `policy-check mcp` driven by the official TypeScript SDK's client
// (@modelcontextprotocol/sdk), over stdio and over Streamable HTTP: tools listed, `ls` runs,
// a refused command is isError naming the rule, an edit outside the workspace is refused, an
// aborted `sleep` leaves no process. Run by tests/mcp_ts/run.sh (which installs the SDK).
//
//     node client.mjs path/to/policy-check

import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const binary = process.argv[2];
if (!binary) throw new Error("usage: node client.mjs path/to/policy-check");

function check(ok, what) {
  if (!ok) throw new Error(`FAILED: ${what}`);
}

const text = (result) => result.content.map((c) => c.text ?? "").join("");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Pids whose command line is exactly `argv` (from /proc, not by name). */
function processesWith(argv) {
  const want = argv.map((a) => a + "\0").join("");
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "latin1") === want) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function waitFor(cond, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (cond()) return true;
    await sleep(50);
  }
  return cond();
}

/** Start `policy-check mcp --http 127.0.0.1:0`; resolves to the process and its URL. */
function startHttp(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(binary, [...args, "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
    const lines = createInterface({ input: proc.stderr });
    lines.once("line", (line) => {
      const m = line.match(/listening on (http:\/\/\S+)/);
      if (m) resolve({ proc, url: new URL(m[1]) });
      else reject(new Error(`no URL in ${line}`));
      lines.on("line", () => {});
    });
    proc.once("error", reject);
  });
}

async function scenario(kind, transportFor, argvSleep) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), "shellgate-ts-")));
  writeFileSync(join(ws, "notes.txt"), "alpha\n");
  const outside = ws + ".outside.txt";
  const { transport, stop } = await transportFor(["mcp", "--policy", "developer", "--cwd", ws]);
  const client = new Client({ name: "shellgate-ts-test", version: "0" });
  try {
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((t) => t.name);
    check(JSON.stringify(names) === '["bash","str_replace_based_edit_tool"]', `${kind}: tools ${names}`);

    const ls = await client.callTool({ name: "bash", arguments: { command: "ls" } });
    check(!ls.isError && text(ls) === "notes.txt\n", `${kind}: ls: ${JSON.stringify(ls)}`);

    const refused = await client.callTool({ name: "bash", arguments: { command: "curl https://example.com" } });
    check(refused.isError && text(refused).includes("[program-not-allowed]"), `${kind}: refusal: ${text(refused)}`);

    const edit = await client.callTool({
      name: "str_replace_based_edit_tool",
      arguments: { command: "create", path: outside, file_text: "pwned\n" },
    });
    check(edit.isError && text(edit).includes("[path-write-outside]"), `${kind}: edit outside: ${text(edit)}`);
    check(!existsSync(outside), `${kind}: the file outside was written`);

    // Abort a running sleep: the SDK sends notifications/cancelled; nothing may be left.
    const controller = new AbortController();
    const call = client.callTool(
      { name: "bash", arguments: { command: argvSleep.join(" ") } },
      undefined,
      { signal: controller.signal, timeout: 60000 },
    );
    check(await waitFor(() => processesWith(argvSleep).length === 1, 10000), `${kind}: the sleep never started`);
    controller.abort("the user pressed stop");
    let aborted = false;
    try {
      await call;
    } catch {
      aborted = true;
    }
    check(aborted, `${kind}: the aborted call resolved`);
    check(await waitFor(() => processesWith(argvSleep).length === 0, 5000), `${kind}: left running: ${processesWith(argvSleep)}`);

    const after = await client.callTool({ name: "bash", arguments: { command: "echo still here" } });
    check(text(after) === "still here\n", `${kind}: after the abort: ${text(after)}`);
    console.log(`ok: ${kind}: list, ls, refusal, edit outside refused, abort leaves no process`);
  } finally {
    await client.close().catch(() => {});
    await stop();
    rmSync(ws, { recursive: true, force: true });
  }
}

const stdio = async (args) => ({
  transport: new StdioClientTransport({ command: binary, args, stderr: "ignore" }),
  stop: async () => {},
});

const http = async (args) => {
  const { proc, url } = await startHttp(args);
  const exited = new Promise((r) => proc.once("exit", r));
  return {
    transport: new StreamableHTTPClientTransport(url),
    stop: async () => {
      proc.kill("SIGTERM");
      await exited;
    },
  };
};

await scenario("stdio", stdio, ["sleep", "100.41"]);
await scenario("http", http, ["sleep", "100.42"]);
