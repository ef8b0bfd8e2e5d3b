#!/bin/sh
cp scripts/com.sorter.agent.plist ~/Library/LaunchAgents/
launchctl load ~/Library/LaunchAgents/com.sorter.agent.plist
