#!/bin/bash
# The cost of the engine options (engine-config.h) against plain `clang++-22 --analyze`:
# builds four command lists for the units in SAMPLE (paths relative to TREE) from
# `gpumem lint --print-commands`, and times each list two at a time:
#   base      the same commands without the plugin and its options (Clang's default checkers)
#   new       gpumem's plugin with the engine options (what gpumem lint runs)
#   noengine  gpumem's plugin without them
#   old       OLD_PLUGIN (an earlier plugin) without them
# The SARIF files stay in OUT (VARIANT.N.sarif) for counting findings.
# usage: bench/lint/depth.sh GPUMEM PLUGIN OLD_PLUGIN TREE SAMPLE OUT
set -u
gpumem=$1 plugin=$2 old_plugin=$3 tree=$4 sample=$5 out=$6
cd "$tree" || exit 1
rm -rf "$out"; mkdir -p "$out"
i=0
while IFS= read -r unit; do
  i=$((i+1)); dir=$(dirname "$unit")
  "$gpumem" lint --no-config --analyzer-plugin="$plugin" --print-commands "$unit" -- \
    -I"$dir" -I"$dir/.." -I"$dir/../.." -DcudaThreadSynchronize=cudaDeviceSynchronize \
    -DcudaThreadExit=cudaDeviceReset -w | head -1 > $out/cmd.$i
done < "$sample"
n=$i
for v in base new noengine old; do
  for k in $(seq 1 $n); do
    line=$(cat $out/cmd.$k)
    case $v in
      base) line=$(echo "$line" | awk '{n=split($0,a," ");s="";for(k=1;k<=n;k++){if(a[k]=="-Xclang"&&(a[k+1]=="-load"||a[k+1]=="-analyzer-config")){k+=3;continue};if(a[k]=="-Xclang"&&(a[k+1]~/^-analyzer-checker=gpumem/||a[k+1]~/^-analyzer-disable-checker=/)){k+=1;continue};s=s (s==""?"":" ") a[k]};print s}');;
      noengine) line=$(echo "$line" | sed 's/ -Xclang -analyzer-config -Xclang unroll-loops=true,widen-loops=true//');;
      old) line=$(echo "$line" | sed 's/ -Xclang -analyzer-config -Xclang unroll-loops=true,widen-loops=true//' |
                  sed "s#$plugin#$old_plugin#");;
    esac
    echo "$line" | sed "s#UNIT.sarif#$out/$v.$k.sarif#"
  done > $out/$v.cmds
done
date -u
for v in base new noengine old; do
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "$v: %e s wall, %U s user, %S s sys" xargs -P 2 -I{} sh -c '{} >/dev/null 2>&1 || true' < $out/$v.cmds
done
date -u
