#!/usr/bin/env bash
# No include points upward. The layers, lowest first, follow the data: probes observe, rules
# make findings, policy decides, the store records, plugins act, views read, the cycle
# sequences it all, app is the command line. A file may include its own layer and those below.
#   tests/layers_test.sh SOURCE_DIR
set -euo pipefail
cd "${1:-.}"
layers=(util config slurm probes rules policy store plugins views cycle app)
rank() {
  local i
  for i in "${!layers[@]}"; do [ "${layers[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo -1
}
bad=0
while IFS= read -r file; do
  case "$file" in
    plugins/*) from=plugins ;;
    src/*) from=$(cut -d/ -f2 <<<"$file") ;;
  esac
  from_rank=$(rank "$from")
  [ "$from_rank" -ge 0 ] || { echo "$file: layer '$from' is not in the list"; bad=1; continue; }
  while IFS= read -r line; do
    dir=$(sed -E 's/^#include "([a-z_]+)\/.*/\1/' <<<"$line")
    case "$dir" in alert | self) dir=plugins ;; esac  # plugins/alert, included as "alert/..."
    to_rank=$(rank "$dir")
    [ "$to_rank" -ge 0 ] || continue
    if [ "$to_rank" -gt "$from_rank" ]; then
      echo "$file: $line points upward ($from -> $dir)"
      bad=1
    fi
  done < <(grep -E '^#include "[a-z_]+/' "$file" || true)
done < <(git ls-files 'src/*.h' 'src/*.cpp' 'plugins/*.h' 'plugins/*.cpp' 2>/dev/null ||
  find src plugins -name '*.h' -o -name '*.cpp')
[ "$bad" -eq 0 ] && echo "layers: no include points upward"
exit "$bad"
