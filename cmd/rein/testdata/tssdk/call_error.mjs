// Calls a failing tool that has an output schema through the official MCP
// TypeScript SDK, as a host built on it does, and prints what the host
// sees as one JSON line: {"isError": …, "text": …} or {"threw": "…"}.
// Usage: node call_error.mjs SDK_DIR REIN_BINARY FOLDER TOOL
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, rein, folder, tool] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "rein-test", version: "1" });
await client.connect(new StdioClientTransport({ command: rein, args: ["mcp", "--db", ":memory:", folder], stderr: "ignore" }));
try {
  await client.listTools(); // the SDK learns the output schemas here
  const res = await client.callTool({ name: tool, arguments: {} });
  console.log(JSON.stringify({ isError: res.isError === true, text: res.content?.[0]?.text ?? "" }));
} catch (e) {
  console.log(JSON.stringify({ threw: String(e?.message ?? e) }));
} finally {
  await client.close();
}
