#!/usr/bin/env bash
# Renders what `llmwatch status` shows into doc/status.html (and doc/status.txt): the demo runs
# in a real terminal (tmux, 110 columns), so colours and layout are the ones a person sees;
# the pane is captured with its escape sequences and turned into HTML.
#   doc/capture-status.sh [path/to/llmwatch]     (root: the demo starts a local Slurm cluster)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
llmwatch=$(realpath "${1:-$here/../build/llmwatch}")
session=llmwatch-capture-$$
tmux new-session -d -s "$session" -x 110 -y 50 "$llmwatch demo; echo DEMO-EXIT=\$?; sleep 3600"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
deadline=$((SECONDS + 600))
until tmux capture-pane -p -t "$session" -S -2000 | grep -q 'DEMO-EXIT='; do
  [ $SECONDS -lt $deadline ] || { echo "capture-status: the demo did not finish" >&2; exit 1; }
  sleep 1
done
tmux capture-pane -p -e -J -t "$session" -S -2000 >"$here/status.ansi"
python3 - "$here/status.ansi" "$here/status.html" "$here/status.txt" <<'PY'
import html, re, sys
src, out_html, out_txt = sys.argv[1:4]
text = open(src, encoding="utf-8", errors="replace").read()
# Only the last status the demo printed ("after the restart") and what follows it.
start = text.rfind("llmwatch status")
text = text[text.rfind("\n", 0, start) + 1:] if start >= 0 else text
text = text[:text.find("DEMO-EXIT=")].rstrip() + "\n"
colors = {30: "#000", 31: "#c33", 32: "#3a3", 33: "#c90", 34: "#36c", 35: "#a3a", 36: "#299",
          37: "#ccc", 90: "#777", 91: "#f55", 92: "#5d5", 93: "#fd5", 94: "#59f", 95: "#e5e",
          96: "#5ee", 97: "#fff"}
out, style, pos = [], {}, 0
def span(chunk):
    css = ";".join(f"{k}:{v}" for k, v in style.items())
    chunk = html.escape(chunk)
    return f'<span style="{css}">{chunk}</span>' if css else chunk
for m in re.finditer(r"\x1b\[([0-9;]*)m", text):
    out.append(span(text[pos:m.start()]))
    pos = m.end()
    for code in [int(c) if c else 0 for c in m.group(1).split(";")]:
        if code == 0: style = {}
        elif code == 1: style["font-weight"] = "bold"
        elif code == 2: style["opacity"] = "0.7"
        elif code in colors: style["color"] = colors[code]
        elif code == 39: style.pop("color", None)
out.append(span(text[pos:]))
open(out_html, "w").write(
    "<!doctype html><meta charset=utf-8><title>llmwatch status</title>\n"
    "<pre style=\"background:#111;color:#ddd;padding:1em;font:13px/1.3 monospace\">"
    + "".join(out) + "</pre>\n")
open(out_txt, "w").write(re.sub(r"\x1b\[[0-9;]*m", "", text))
PY
rm -f "$here/status.ansi"
echo "capture-status: wrote $here/status.html and $here/status.txt"
