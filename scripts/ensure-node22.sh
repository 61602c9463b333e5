#!/usr/bin/env bash
# Kept for older instructions: the Node 22 binary (see ensure-node.sh).
exec bash "$(dirname "$0")/ensure-node.sh" 22
