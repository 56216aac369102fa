#!/bin/bash
# Only reads: allowed by the read-only policy.
ls -la
cat README.md |
  grep -n shellgate && wc -l README.md
