#!/usr/bin/env bash
# Plays the recorded computer-use session against a real (virtual) X display:
# starts Xvfb on a free display, opens an xmessage dialog, replays session.json through
# `toolcall run` (screenshots saved to the directory given, default target/computer-demo),
# then stops everything it started. Needs: Xvfb and xmessage (apt-get install xvfb x11-utils).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/computer-demo}"
mkdir -p "$out"

for tool in Xvfb xmessage; do
  command -v "$tool" >/dev/null 2>&1 || { echo "demo.sh: $tool not found (apt-get install xvfb x11-utils)" >&2; exit 1; }
done

n=99
while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
Xvfb ":$n" -screen 0 1024x768x24 -nolisten tcp -noreset >/dev/null 2>&1 &
xvfb_pid=$!
dialog_pid=""
cleanup() {
  [ -n "$dialog_pid" ] && kill "$dialog_pid" 2>/dev/null || true
  kill "$xvfb_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
export DISPLAY=":$n"
for _ in $(seq 1 100); do
  [ -e "/tmp/.X11-unix/X$n" ] && break
  sleep 0.1
done

# The app under test: a dialog, and after it is answered a second window saying which
# button was pressed (so the final screenshot shows that the click landed).
# `-fn fixed` (a font built into every X server, aliased to one of the same size by the font
# packages) and the C locale keep the buttons at the recorded coordinates whatever fonts
# are installed; the toolkit's default font depends on them.
(
  export LC_ALL=C
  answer=$(xmessage -fn fixed -center -buttons "Yes:0,No:1" -print "toolcall computer-use demo: please click Yes" || true)
  xmessage -fn fixed -center -timeout 30 "The dialog was answered: ${answer:-nothing}"
) &
dialog_pid=$!
sleep 1

prompt=$(sed -n 's/^  "prompt": "\(.*\)",$/\1/p' examples/computer/session.json)
cargo run -q -p toolcall-cli -- run --pack computer --replay examples/computer/session.json \
  --save-images "$out" "$prompt"
echo "demo.sh: screenshots saved in $out"
