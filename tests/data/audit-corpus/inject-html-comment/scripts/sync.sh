#!/bin/sh
echo syncing
