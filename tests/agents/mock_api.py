"""Scripted mocks of the three model APIs the agents speak, on 127.0.0.1.

Each request of the agent's main loop (one that offers tools) is answered with the next step of
a script: a tool call, or, when the script is done, a final text. Which step is next is read off
the request itself (the number of tool calls already in its history), so retries and side
requests (titles, summaries) do not shift the script. Every tool result the agent sends back is
recorded under its step, which is what the harness asserts on: the model's view of each call.

Protocols: Anthropic Messages (SSE when `stream` is set) for Claude Code, OpenAI Responses (SSE)
for Codex, Gemini `generateContent` / `streamGenerateContent?alt=sse` for Gemini CLI.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Script:
    """The steps (dicts with `tool` and `input`, in the agent's own tool names) and what came
    back for each."""

    def __init__(self, steps, final_text="All steps done."):
        self.steps = steps
        self.final_text = final_text
        self.results = {}  # step index -> text the agent returned as the tool's result
        self.requests = []  # (path, summary) of every request, for diagnostics
        self.tools = []  # the tool names the agent offered in its main-loop requests
        self.lock = threading.Lock()

    def record(self, index, text):
        with self.lock:
            self.results.setdefault(index, text)


def _text_of(content):
    """A tool result's content (string, list of blocks, dict) as one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        if "text" in content:
            return _text_of(content["text"])
        return json.dumps(content)
    return str(content)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script = None  # set per server

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events):
        """`events`: (event name or None, payload dict)."""
        out = []
        for name, payload in events:
            if name:
                out.append(f"event: {name}\n")
            out.append(f"data: {json.dumps(payload)}\n\n")
        self._send(200, "".join(out), "text/event-stream")

    def do_HEAD(self):
        self._send(200, b"")

    def do_GET(self):
        self.script.requests.append(("GET " + self.path, ""))
        if "/models" in self.path:
            self._send(200, json.dumps({"data": [], "models": []}))
        else:
            self._send(200, "{}")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path
        self.script.requests.append(("POST " + path, ""))
        try:
            if "/messages" in path:
                self._anthropic(path, body)
            elif "/responses" in path:
                self._openai(body)
            elif ":generateContent" in path or ":streamGenerateContent" in path:
                self._gemini(path, body)
            elif ":countTokens" in path:
                self._send(200, json.dumps({"totalTokens": 10}))
            else:
                self._send(404, json.dumps({"error": "mock: unknown path " + path}))
        except BrokenPipeError:
            pass

    # -- Anthropic Messages ------------------------------------------------------------------
    def _anthropic(self, path, body):
        s = self.script
        if "count_tokens" in path:
            return self._send(200, json.dumps({"input_tokens": 10}))
        tools = [t.get("name") for t in body.get("tools") or []]
        n = 0
        ids = {}
        for m in body.get("messages") or []:
            if not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if b.get("type") == "tool_use" and b.get("id", "").startswith("toolu_mock_"):
                    ids[b["id"]] = int(b["id"].rsplit("_", 1)[1])
                    n += 1
                elif b.get("type") == "tool_result" and b.get("tool_use_id") in ids:
                    s.record(ids[b["tool_use_id"]], _text_of(b.get("content")))
        model = body.get("model", "mock")
        main = "Bash" in tools
        if main:
            s.tools = tools
        if main and n < len(s.steps):
            step = s.steps[n]
            block = {"type": "tool_use", "id": f"toolu_mock_{n}", "name": step["tool"],
                     "input": step["input"]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": s.final_text if main else "ok"}
            stop = "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg = {"id": f"msg_mock_{n}", "type": "message", "role": "assistant", "model": model,
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self._send(200, json.dumps(msg))
        start = dict(msg, content=[], stop_reason=None)
        if block["type"] == "tool_use":
            cb = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            cb = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        self._sse([
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": cb}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    # -- OpenAI Responses --------------------------------------------------------------------
    def _openai(self, body):
        s = self.script
        n = 0
        ids = {}
        for item in body.get("input") or []:
            t = item.get("type")
            cid = item.get("call_id", "")
            if t in ("function_call", "custom_tool_call", "local_shell_call") and \
                    cid.startswith("call_mock_"):
                ids[cid] = int(cid.rsplit("_", 1)[1])
                n += 1
            elif t in ("function_call_output", "custom_tool_call_output") and cid in ids:
                s.record(ids[cid], _text_of(item.get("output")))
        tools = body.get("tools") or []
        names = [t.get("name") or t.get("type") for t in tools]
        s.requests[-1] = (s.requests[-1][0], "tools=" + ",".join(map(str, names)))
        if tools:
            s.tools = names
        rid = f"resp_mock_{n}"
        if tools and n < len(s.steps):
            step = s.steps[n]
            if step.get("kind") == "custom":
                item = {"type": "custom_tool_call", "id": f"ctc_mock_{n}", "status": "completed",
                        "call_id": f"call_mock_{n}", "name": step["tool"],
                        "input": step["input"]}
            else:
                item = {"type": "function_call", "id": f"fc_mock_{n}", "status": "completed",
                        "call_id": f"call_mock_{n}", "name": step["tool"],
                        "arguments": json.dumps(step["input"])}
        else:
            item = {"type": "message", "id": f"msg_mock_{n}", "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": s.final_text, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        resp = {"id": rid, "object": "response", "status": "completed", "model": "mock",
                "output": [item], "usage": usage}
        self._sse([
            ("response.created", {"type": "response.created",
                                  "response": dict(resp, status="in_progress", output=[])}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": resp}),
        ])

    # -- Gemini generateContent --------------------------------------------------------------
    def _gemini(self, path, body):
        s = self.script
        n = 0
        for c in body.get("contents") or []:
            for p in c.get("parts") or []:
                if "functionCall" in p:
                    n += 1
                if "functionResponse" in p:
                    fr = p["functionResponse"]
                    idx = fr.get("id", "")
                    if idx.startswith("gcall_mock_"):
                        s.record(int(idx.rsplit("_", 1)[1]), _text_of(fr.get("response")))
                    else:
                        s.record(n - 1, _text_of(fr.get("response")))
        decls = []
        for t in body.get("tools") or []:
            decls += [d.get("name") for d in t.get("functionDeclarations") or []]
        main = "run_shell_command" in decls
        if main:
            s.tools = decls
        if main and n < len(s.steps):
            step = s.steps[n]
            part = {"functionCall": {"name": step["tool"], "args": step["input"],
                                     "id": f"gcall_mock_{n}"}}
        else:
            text = s.final_text if main else "ok"
            # A side request (e.g. routing, next-speaker check) that wants JSON gets JSON.
            cfg = body.get("generationConfig") or {}
            if cfg.get("responseMimeType") == "application/json":
                text = json.dumps({"reasoning": "done", "next_speaker": "user",
                                   "model_choice": "flash"})
            part = {"text": text}
        resp = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                  "totalTokenCount": 15},
                "modelVersion": "mock"}
        if ":streamGenerateContent" in path:
            self._sse([(None, resp)])
        else:
            self._send(200, json.dumps(resp))


def serve(script):
    """Starts a mock on 127.0.0.1 (a free port) in a thread; returns (server, base URL)."""
    handler = type("Handler", (_Handler,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
