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
# It allocates with jemalloc, one arena (CMakeLists.txt: llmwatch_allocator), linked in: a copy
# run on a compute node needs no jemalloc library there.
if grep -q '^LLMWATCH_JEMALLOC:BOOL=ON' "$build/CMakeCache.txt" &&
   ! grep -qE '^LLMWATCH_(SANITIZE|FUZZ):BOOL=ON' "$build/CMakeCache.txt"; then
  stats=$(MALLOC_CONF=stats_print:true "$prefix/bin/llmwatch" --version 2>&1)
  grep -q 'opt.narenas: 1$' <<<"$stats" || { echo "llmwatch does not run on jemalloc with one arena" >&2; exit 1; }
  if ldd "$prefix/bin/llmwatch" | grep -q jemalloc; then
    echo "llmwatch needs a jemalloc library at run time" >&2; exit 1
  fi
fi
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
  (cd "$build" && cpack -G DEB >/dev/null)
  deb=$(ls "$build"/llmwatch_*.deb | head -n 1)
  contents=$(dpkg-deb -c "$deb")
  grep -q './usr/bin/llmwatch' <<<"$contents"
  grep -q './usr/share/llmwatch/conf/llmwatch.toml' <<<"$contents"
  grep -q slurm-client <<<"$(dpkg-deb -f "$deb" Depends)"
fi
echo "install layout ok"
