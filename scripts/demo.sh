#!/usr/bin/env bash
# The main job on the embedded defaults: set up, validate and publish the example skills to the
# local registry folder, then run an agent that discovers a skill with ls/cat and runs its script
# inside a locked-down container. With no model endpoint configured the agent is the scripted
# model (examples/demo/demo.script.yaml); set SKILLCTL_MODEL (e.g. openai-chat:MODEL with
# OPENAI_BASE_URL / OPENAI_API_KEY) to use a real one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="${SKILLCTL_VENV:-$PWD/.venv}/bin:$PATH"

export SKILLCTL_REGISTRY="${SKILLCTL_REGISTRY:-$PWD/.skillctl/registry}"
MODEL="${SKILLCTL_MODEL:-script:examples/demo/demo.script.yaml}"

echo "== validate" >&2
skillctl validate --strict skills
echo "== publish to $SKILLCTL_REGISTRY" >&2
skillctl publish skills
echo "== run ($MODEL)" >&2
skillctl run --model "$MODEL" --skill tally --skill csv-sql --skill find-excerpts --skill json-shape \
    --input examples/demo/notes.txt --transcript .skillctl/runs/demo.jsonl \
    "How many words are in notes.txt? Use the skills available."
