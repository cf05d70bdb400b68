#!/usr/bin/env bash
# The install layout: `cmake --install` into a temp prefix gives a binary that finds its
# shipped files there (not in the source tree), a man page and bash completion; `cpack`
# builds a .deb holding the same.
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/llmwatch share/llmwatch/conf/llmwatch.toml share/llmwatch/slurm/llmwatch.sbatch \
         share/llmwatch/slurm/local-cluster.sh share/llmwatch/examples/fake-trainer.sh \
         share/man/man1/llmwatch.1 share/bash-completion/completions/llmwatch \
         share/llmwatch/examples/grafana/llmwatch.json share/llmwatch/examples/systemd/llmwatch.service; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f" >&2; exit 1; }
done
[ -x "$prefix/share/llmwatch/slurm/local-cluster.sh" ] || { echo "local-cluster.sh lost its exec bit" >&2; exit 1; }
"$prefix/bin/llmwatch" --version | grep -q '^llmwatch ' 
"$prefix/bin/llmwatch" config check "$prefix/share/llmwatch/conf/llmwatch.toml" >/dev/null
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
  (cd "$build" && cpack -G DEB >/dev/null)
  deb=$(ls "$build"/llmwatch_*.deb | head -n 1)
  contents=$(dpkg-deb -c "$deb")
  grep -q './usr/bin/llmwatch' <<<"$contents"
  grep -q './usr/share/llmwatch/conf/llmwatch.toml' <<<"$contents"
  grep -q slurm-client <<<"$(dpkg-deb -f "$deb" Depends)"
fi
echo "install layout ok"
