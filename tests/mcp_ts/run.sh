#!/usr/bin/env bash
# The official TypeScript SDK's MCP client against `policy-check mcp` (stdio and HTTP):
#     tests/mcp_ts/run.sh target/debug/policy-check
# Installs @modelcontextprotocol/sdk (pinned) once into ~/.cache/shellgate-mcp-ts (or
# $SHELLGATE_MCP_TS_CACHE); the test itself uses no network but loopback. Prints
# `skipped: ...` and exits 0 when npm cannot install the SDK and none is cached.
set -euo pipefail
version=1.32.2
binary="$(realpath "$1")"
prefix="${SHELLGATE_MCP_TS_CACHE:-$HOME/.cache/shellgate-mcp-ts}/sdk-$version"
if [ ! -f "$prefix/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  mkdir -p "$prefix"
  if ! npm install --no-audit --no-fund --loglevel=error --fetch-retries=1 \
      --prefix "$prefix" "@modelcontextprotocol/sdk@$version" >/dev/null; then
    rm -rf "$prefix"
    echo "skipped: npm install @modelcontextprotocol/sdk@$version failed (registry unreachable?)"
    exit 0
  fi
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# ES modules resolve packages next to the importing file: the script goes beside the SDK.
cp "$(dirname "$0")/client.mjs" "$work/"
ln -s "$prefix/node_modules" "$work/node_modules"
timeout 120 node "$work/client.mjs" "$binary"
