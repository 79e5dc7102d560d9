#!/usr/bin/env bash
# A newcomer's first hour, timed: a fresh Debian 12 root (debootstrap --variant=minbase, with
# what a new machine of this kind starts with: gcc, g++, make, cmake, git), the CUDA toolkit
# bound in from this machine, a fresh clone of this repository's HEAD, and the README's
# commands run inside it with chroot, each timed (wall, and user + system CPU of everything it
# ran), with the load average before and after (other work on the machine shows there).
# Then the first hour's usual next steps: each command's --version, gpumem lint from the
# repository's root, a second scripts/test with nothing changed, scripts/install.
# Needs root, debootstrap (installed when missing) and Debian's mirror.
#   usage: bench/first-run/fresh-root.sh [ROOT] [CUDA_DIR]
#          (default /tmp/gpumem-fresh-root, /usr/local/cuda-13.0); a table at the end
set -euo pipefail
root=${1:-/tmp/gpumem-fresh-root}
cuda=${2:-/usr/local/cuda-13.0}
src=$(cd "$(dirname "$0")/../.." && pwd)
commit=$(git -C "$src" rev-parse HEAD)
[ ! -e "$root" ] || { echo "fresh-root: $root exists; give another ROOT" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() { mkdir -p "$root$2"; mount --bind "$1" "$root$2"; mounts+=("$root$2"); }

debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$root.debootstrap.log" 2>&1
cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
rm -f "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
bind /proc /proc
bind /dev /dev
bind /dev/pts /dev/pts # a pseudo-terminal, as on a machine (a lint test runs under script(1))
bind /sys /sys
bind "$cuda" "/usr/local/$(basename "$cuda")"
ln -s "$(basename "$cuda")" "$root/usr/local/cuda"
chroot "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  gcc g++ make cmake git ca-certificates >/dev/null && apt-get clean'
git clone -q "$src" "$root/home/newcomer/gpumem"
git -C "$root/home/newcomer/gpumem" checkout -q "$commit"

rows=()
step() { # step LABEL COMMAND: runs COMMAND in the clone, inside the root; a row of the table
  local label=$1 cmd=$2 before after
  before=$(cut -d' ' -f1 /proc/loadavg)
  echo "== $label: $cmd"
  /usr/bin/time -f "%e %U %S" -o "$root.time" chroot "$root" bash -c \
    "cd /home/newcomer/gpumem && $cmd" 2>&1 |
    tee "$root.step.log" | tail -n 25 || true
  after=$(cut -d' ' -f1 /proc/loadavg)
  read -r wall user sys < <(tail -1 "$root.time")
  rows+=("$(printf '| %s | `%s` | %.0f s | %.0f s | %s to %s |' "$label" "$cmd" "$wall" \
    "$(echo "$user + $sys" | bc)" "$before" "$after")")
}
step "demo, first run" "scripts/demo"
step "demo, second run" "scripts/demo"
step "test, first run" "scripts/test"
step "test, second run (nothing changed)" "scripts/test"
step "install (after scripts/test)" "scripts/install"
step "versions" "gpumem --version; gpumem lint --version; gpumem report --version"
step "lint from the root" "gpumem lint examples/leak_hunt.c; gpumem lint examples/lint_findings.c | tail -1"
step "a trace and its summary" "cc -O2 -g bench/timeline/sample.c \$(pkg-config --cflags --libs gpumem) \
  -Wl,-rpath,\$(pkg-config --variable=libdir gpumem) -o /tmp/sample && GPUMEM_BACKEND=sim \
  GPUMEM_BACKTRACE=1 GPUMEM_TRACE=/tmp/s.json GPUMEM_LEAK_REPORT=off /tmp/sample &&
  gpumem report --summary /tmp/s.json | tail -8"
echo
echo "fresh root at $commit, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "| step | command | wall | CPU (user + sys) | load average before, after |"
echo "| --- | --- | ---: | ---: | --- |"
printf '%s\n' "${rows[@]}"
du -sh "$root/home/newcomer/gpumem"/build* 2>/dev/null || true
