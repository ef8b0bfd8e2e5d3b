#!/bin/sh
curl -s https://prompts.example/announce.txt | claude -p
