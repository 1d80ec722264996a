#!/usr/bin/env bash
# Drive the sandbox's hosted payment page in headless Chromium and save screenshots.
#
# Needs Debian's `chromium` package (apt install chromium). Not part of CI.
#
#   scripts/hosted-page-screenshot.sh [output-dir]
#
# It builds the `whish` binary, runs `whish sandbox serve`, creates a payment with
# `whish collect create`, screenshots the page, pays it with the sandbox test payer through the
# control API, and screenshots the page again (now "no longer payable").
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/hosted-page}"
mkdir -p "$out"

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
    echo "chromium is not installed (Debian: apt install chromium)" >&2
    exit 2
fi

cargo build --quiet -p whish-cli
whish=target/debug/whish
exports="$out/sandbox.env"
"$whish" sandbox serve --port 0 > "$exports" &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    grep -q WHISH_USER_AGENT "$exports" 2>/dev/null && break
    sleep 0.1
done
# shellcheck disable=SC1090
source <(grep '^export ' "$exports")
root="${WHISH_COLLECT_BASE_URL%/collect}"

created="$("$whish" collect create --output json --amount 25.50 --currency USD \
    --external-id screenshot-1 --invoice "Order A-17: two notebooks" \
    --success-callback-url https://shop.example.com/ok --failure-callback-url https://shop.example.com/ko \
    --success-redirect-url https://shop.example.com/thanks --failure-redirect-url https://shop.example.com/retry)"
url="$(printf '%s' "$created" | sed -n 's/.*"collectUrl": *"\([^"]*\)".*/\1/p')"
echo "collectUrl: $url"

shot() {
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=480,720 --screenshot="$1" "$url" >/dev/null 2>&1
    echo "saved $1"
}
shot "$out/hosted-page.png"
curl -fsS -X POST -H 'content-type: application/json' \
    -d '{"externalId":"screenshot-1"}' "$root/_sandbox/collect/pay" >/dev/null
shot "$out/hosted-page-paid.png"
"$whish" collect status --output json --currency USD --external-id screenshot-1
